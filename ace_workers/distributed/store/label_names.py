"""How a label, a labelled skillbook (``support@prod``) and a canary share (``10%``) are written:
checked without Redis.

Kept apart from the label store (labels.py, which re-exports these) so the settings and the
command line check a name without importing the store's transactions.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .errors import InvalidLabelError
from .keys import validate_skillbook_name

__all__ = ["HEAD", "SkillbookRef", "parse_share", "parse_skillbook_ref", "validate_label"]

HEAD = "head"  # not a label: the current version, where learning writes
_LABEL = re.compile(r"[A-Za-z][A-Za-z0-9_.-]{0,63}")


def validate_label(label: object) -> str:
    """Return ``label`` if it can name a version, else raise InvalidLabelError naming why."""
    if not isinstance(label, str) or _LABEL.fullmatch(label) is None:
        raise InvalidLabelError(label, "use 1 to 64 letters, digits, '_', '.' or '-', starting with a letter")
    if label == HEAD:
        raise InvalidLabelError(label, f"{HEAD!r} is the current version itself, not a label")
    return label


@dataclass(frozen=True)
class SkillbookRef:
    """A skillbook as a reader names it: ``NAME`` (the head) or ``NAME@LABEL``."""

    name: str
    label: str | None = None

    def __str__(self) -> str:
        return self.name if self.label is None else f"{self.name}@{self.label}"


def parse_skillbook_ref(ref: str) -> SkillbookRef:
    """Split ``support@prod`` into the skillbook and the label (``@head`` or none: the head).

    Raises InvalidSkillbookNameError or InvalidLabelError (ValueErrors) naming the bad part.
    """
    name, at, label = ref.rpartition("@") if "@" in ref else (ref, "", "")
    validate_skillbook_name(name)
    if not at or label == HEAD:
        return SkillbookRef(name)
    return SkillbookRef(name, validate_label(label))


def parse_share(text: str) -> float:
    """``"10%"`` or ``"0.1"`` as 0.1; ValueError naming the text for anything else or out of 0..1."""
    raw = text.strip()
    try:
        share = float(raw[:-1]) / 100 if raw.endswith("%") else float(raw)
    except ValueError:
        raise ValueError(
            f"canary share {text!r} is not a share: use a percentage (10%) or a fraction (0.1)"
        ) from None
    if not 0.0 <= share <= 1.0:
        raise ValueError(f"canary share {text!r} is outside 0% to 100%")
    return share

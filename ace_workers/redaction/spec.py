"""What to redact, as ``ACE_REDACT`` and ``tenant set --redact`` write it: kinds, removals, custom regexes.

The text is a comma-separated list of entries::

    default                     secret, email, phone and card (what an unset setting means)
    off                         nothing (alone: it cannot be combined)
    ipv4 / iban / ...           one more kind (see KINDS)
    -phone                      one kind fewer
    phone:GB                    phone numbers written nationally as in that region (default US);
                                numbers written with + and a country code are found in any case
    EMPLOYEE=EMP-[0-9]{6}       a custom kind: the regex's matches become <EMPLOYEE_1>, ...;
                                with a group named ``redact``, only that group is replaced
    keep:metadata.user_id       the value at this dotted path of a trace (or sample) is never
                                redacted: a subject ``forget --subject`` must find as it was sent

A comma inside ``()``, ``[]`` or ``{}``, or after a backslash, belongs to a custom regex. This module
only parses (standard library only): the detectors are built in detectors.py.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .errors import RedactionSpecError

__all__ = [
    "DEFAULT_KINDS",
    "DEFAULT_PHONE_REGION",
    "KINDS",
    "OFF",
    "CustomPattern",
    "RedactionSpec",
    "parse_redaction_spec",
]

# Every built-in kind, in the order they are applied: credentials first (a token may hold an
# e-mail-like or digit run), cards before phones (a card number must not be read as a phone).
KINDS = ("secret", "email", "card", "iban", "ipv4", "ipv6", "phone")
DEFAULT_KINDS = ("secret", "email", "card", "phone")
DEFAULT = "default"
OFF = "off"
DEFAULT_PHONE_REGION = "US"
# The group of a custom regex that is replaced when present (the rest of the match is kept).
REDACT_GROUP = "redact"

KEEP = "keep"
# The deepest kept path: the same bound as a forget subject's.
_MAX_KEPT_PATH = 16
_CUSTOM_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,31}")
_REGION = re.compile(r"[A-Z]{2}")
_MAX_SPEC_CHARS = 4000
_OPENING, _CLOSING = "([{", ")]}"


@dataclass(frozen=True)
class CustomPattern:
    """A kind the operator defines: its name (upper case in placeholders) and its regex."""

    name: str
    regex: str

    @property
    def compiled(self) -> re.Pattern[str]:
        """The regex, compiled (the parser checked that it compiles)."""
        return re.compile(self.regex)


@dataclass(frozen=True)
class RedactionSpec:
    """The kinds to redact, the phone region, and the custom patterns; ``text`` is how it was written."""

    kinds: tuple[str, ...] = DEFAULT_KINDS
    phone_region: str = DEFAULT_PHONE_REGION
    custom: tuple[CustomPattern, ...] = ()
    text: str = DEFAULT
    kept: tuple[tuple[str, ...], ...] = ()  # dotted paths from a trace's top, never redacted

    @property
    def off(self) -> bool:
        """True when nothing is redacted."""
        return not self.kinds and not self.custom


def parse_redaction_spec(text: str | None) -> RedactionSpec:
    """The spec ``text`` writes (None or blank: ``default``); RedactionSpecError naming the bad entry."""
    text = (text or "").strip() or DEFAULT
    if len(text) > _MAX_SPEC_CHARS:
        raise RedactionSpecError(text[:40] + "...", f"longer than {_MAX_SPEC_CHARS} characters")
    entries = split_entries(text)
    if OFF in (entry.lower() for entry in entries):
        if len(entries) > 1:
            raise RedactionSpecError(OFF, "'off' redacts nothing and cannot be combined with other entries")
        return RedactionSpec(kinds=(), text=OFF)
    kinds: list[str] = []
    removed: set[str] = set()
    region = DEFAULT_PHONE_REGION
    custom: dict[str, CustomPattern] = {}
    kept = tuple(_kept_path(entry) for entry in entries if entry.lower().startswith(KEEP + ":"))
    for entry in (entry for entry in entries if not entry.lower().startswith(KEEP + ":")):
        if "=" in entry and not entry.startswith("-"):
            pattern = _custom(entry)
            if pattern.name.upper() in custom:
                raise RedactionSpecError(entry, f"custom kind {pattern.name!r} is named twice")
            custom[pattern.name.upper()] = pattern
            continue
        name, colon, argument = entry.lower().partition(":")
        if name == DEFAULT and not colon:
            kinds += DEFAULT_KINDS
        elif name.startswith("-") and not colon:
            removed.add(_kind(entry, name[1:]))
        else:
            kinds.append(_kind(entry, name))
            if colon:
                region = _region(entry, name, argument)
    chosen = tuple(kind for kind in KINDS if kind in kinds and kind not in removed)
    return RedactionSpec(
        kinds=chosen, phone_region=region, custom=tuple(custom.values()), text=text, kept=kept
    )


def split_entries(text: str) -> list[str]:
    """The comma-separated entries of ``text``, a comma in brackets or after a backslash kept in its entry."""
    entries: list[str] = []
    current: list[str] = []
    depth, escaped = 0, False
    for char in text:
        if escaped:
            escaped = False
        elif char == "\\":
            escaped = True
        elif char in _OPENING:
            depth += 1
        elif char in _CLOSING:
            depth = max(0, depth - 1)
        elif char == "," and depth == 0:
            entries.append("".join(current).strip())
            current = []
            continue
        current.append(char)
    entries.append("".join(current).strip())
    blank = [entry for entry in entries if not entry]
    if blank and len(entries) > 1:
        raise RedactionSpecError(text, "an entry is empty (two commas in a row, or one at an end)")
    return entries


def _kind(entry: str, name: str) -> str:
    if name not in KINDS:
        raise RedactionSpecError(
            entry, f"unknown kind {name!r}; the kinds are {', '.join(KINDS)} (and 'default', 'off')"
        )
    return name


def _region(entry: str, name: str, argument: str) -> str:
    region = argument.strip().upper()
    if name != "phone":
        raise RedactionSpecError(entry, f"only phone takes an argument (a region: phone:GB), not {name!r}")
    if _REGION.fullmatch(region) is None:
        raise RedactionSpecError(entry, "a phone region is two letters, e.g. phone:GB")
    return region


def _kept_path(entry: str) -> tuple[str, ...]:
    path = tuple(part.strip() for part in entry.partition(":")[2].split("."))
    if not all(path) or len(path) > _MAX_KEPT_PATH:
        raise RedactionSpecError(entry, "keep takes a dotted path into a trace, e.g. keep:metadata.user_id")
    return path


def _custom(entry: str) -> CustomPattern:
    name, _, regex = entry.partition("=")
    name = name.strip()
    if _CUSTOM_NAME.fullmatch(name) is None:
        raise RedactionSpecError(
            entry, "a custom kind is NAME=REGEX, NAME a letter then letters, digits or _ (at most 32)"
        )
    if name.lower() in (*KINDS, DEFAULT, OFF):
        raise RedactionSpecError(entry, f"{name!r} is a built-in kind's name; name the custom kind otherwise")
    if not regex:
        raise RedactionSpecError(entry, "the regex after '=' is empty")
    try:
        compiled = re.compile(regex)
    except (re.error, RecursionError, OverflowError) as exc:
        raise RedactionSpecError(entry, f"the regex does not compile: {exc}") from None
    if compiled.fullmatch("") is not None:
        raise RedactionSpecError(entry, "the regex matches the empty string")
    return CustomPattern(name, regex)

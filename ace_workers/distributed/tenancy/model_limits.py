"""A provider's limits per model (requests and tokens per minute), as ``ACE_MODEL_LIMITS`` names them.

The setting is ``MODEL=rpm:N,tpm:N,burst:S;MODEL=...``: for example
``openai/gpt-4o-mini=rpm:500,tpm:200000;sim=rpm:600``. Every field is optional, but an entry
names at least one; ``burst`` is how many seconds of traffic may go at once after a quiet spell
(default 0: calls are spaced evenly at the rate). The limits are the whole fleet's, shared by
every tenant calling the model.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

__all__ = ["ModelLimits", "parse_model_limits"]

_MODEL = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:/@+-]*")
_FIELDS = ("rpm", "tpm", "burst")


@dataclass(frozen=True)
class ModelLimits:
    """A provider's limits for one model: requests and tokens per minute (None: none), and burst seconds."""

    model: str
    rpm: float | None = None
    tpm: float | None = None
    burst: float = 0.0

    def __post_init__(self) -> None:
        for name in ("rpm", "tpm"):
            value = getattr(self, name)
            if value is not None and (not math.isfinite(value) or value <= 0):
                raise ValueError(f"model {self.model!r}: {name} must be a number > 0, got {value!r}")
        if not math.isfinite(self.burst) or not 0 <= self.burst <= 60:
            raise ValueError(f"model {self.model!r}: burst must be 0 to 60 seconds, got {self.burst!r}")


def parse_model_limits(text: str) -> dict[str, ModelLimits]:
    """The limits ``text`` (the ACE_MODEL_LIMITS form) sets, by model; ValueError naming what is wrong."""
    limits: dict[str, ModelLimits] = {}
    for entry in (part.strip() for part in text.split(";")):
        if not entry:
            continue
        model, equals, spec = (piece.strip() for piece in entry.partition("="))
        if not equals or _MODEL.fullmatch(model) is None:
            raise ValueError(f"entry {entry!r}: expected MODEL=rpm:N,tpm:N")
        if model in limits:
            raise ValueError(f"model {model!r} is named twice")
        values: dict[str, float] = {}
        for item in (piece.strip() for piece in spec.split(",")):
            name, colon, number = (piece.strip() for piece in item.partition(":"))
            if not colon or name not in _FIELDS:
                raise ValueError(
                    f"model {model!r}: {item!r} is not one of {', '.join(f + ':N' for f in _FIELDS)}"
                )
            if name in values:
                raise ValueError(f"model {model!r}: {name} is given twice")
            try:
                values[name] = float(number)
            except ValueError:
                raise ValueError(f"model {model!r}: {name} {number!r} is not a number") from None
        if "rpm" not in values and "tpm" not in values:
            raise ValueError(f"model {model!r}: name rpm, tpm or both")
        limits[model] = ModelLimits(model, values.get("rpm"), values.get("tpm"), values.get("burst", 0.0))
    return limits

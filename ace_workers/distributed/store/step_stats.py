"""Per-step figures of a batch: how many samples each step finished or failed, its time and its tokens.

A worker reports each finished step run as a :class:`StepRun`; the batch's steps hash sums them
(see ``count_step.lua``), and :func:`read_step_stats` reads the sums back as :class:`StepStats`,
one per step index, in step order. The layout of the hash is in :mod:`.keys`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from redis.typing import EncodableT

from .replies import decode_text

__all__ = ["StepRun", "StepStats", "read_step_stats", "run_from_message"]


@dataclass(frozen=True)
class StepRun:
    """One finished run of step ``index`` of a sample: its time and the LLM usage of its outputs."""

    index: int
    name: str
    seconds: float
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float | None = None  # USD; None when the provider priced no call of the step

    def args(self) -> list[EncodableT]:
        """The run as count_step.lua takes it: index, name, seconds, prompt, completion, cost ('' if none)."""
        cost = "" if self.cost is None else f"{self.cost:.12f}"
        return [
            self.index,
            self.name,
            f"{max(0.0, self.seconds):.6f}",
            max(0, self.prompt_tokens),
            max(0, self.completion_tokens),
            cost,
        ]

    def to_message(self) -> list[Any]:
        """The run as the next step's message carries it (see :func:`run_from_message`)."""
        return [self.index, self.name, self.seconds, self.prompt_tokens, self.completion_tokens, self.cost]


def run_from_message(value: object, index: int) -> StepRun | None:
    """The run of step ``index`` a step message carries (``to_message``), or None.

    A message is untrusted, and a step's figures are no reason to fail its sample: anything but
    a run of step ``index`` with a name, finite non-negative numbers and a cost or null is None.
    """
    if not isinstance(value, list) or len(value) != 6:
        return None
    step, name, seconds, prompt, completion, cost = value
    counts_ok = all(
        isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in (step, prompt, completion)
    )
    if not counts_ok or step != index or not isinstance(name, str) or not name:
        return None
    if not _figure(seconds) or not (cost is None or _figure(cost)):
        return None
    return StepRun(step, name, float(seconds), prompt, completion, None if cost is None else float(cost))


def _figure(value: object) -> bool:
    """True for a finite non-negative number (not a bool)."""
    return (
        isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value) and value >= 0
    )


@dataclass(frozen=True)
class StepStats:
    """What one step of a batch did so far, summed over its samples."""

    index: int
    name: str
    done: int = 0
    failed: int = 0
    seconds: float = 0.0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float | None = None

    @property
    def mean_seconds(self) -> float | None:
        """The mean run time of the step's done runs; None before the first."""
        return self.seconds / self.done if self.done else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "name": self.name,
            "done": self.done,
            "failed": self.failed,
            "seconds": round(self.seconds, 6),
            "mean_seconds": None if self.mean_seconds is None else round(self.mean_seconds, 6),
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "cost": self.cost,
        }


_INTS = ("done", "failed", "prompt_tokens", "completion_tokens")


def read_step_stats(raw: dict[Any, Any]) -> list[StepStats]:
    """The steps hash (``N:field`` -> value, as HGETALL gives it) as one StepStats per step, in order.

    A field that does not parse is left out: the hash is written by workers only, but Redis is
    shared, and a page showing a batch must not fail on one odd field.
    """
    fields: dict[int, dict[str, str]] = {}
    for key, value in raw.items():
        index, _, name = decode_text(key).partition(":")
        if index.isdigit() and name:
            fields.setdefault(int(index), {})[name] = decode_text(value)
    return [_stats(index, values) for index, values in sorted(fields.items())]


def _stats(index: int, values: dict[str, str]) -> StepStats:
    counts = {name: int(_number(values.get(name))) for name in _INTS}
    cost = values.get("cost")
    return StepStats(
        index=index,
        name=values.get("name", f"step {index}"),
        seconds=_number(values.get("seconds")),
        cost=_number(cost) if cost is not None else None,
        **counts,
    )


def _number(text: str | None) -> float:
    """A figure of the hash; 0 for one absent or unreadable."""
    try:
        value = float(text) if text is not None else 0.0
    except ValueError:
        return 0.0
    return value if math.isfinite(value) else 0.0

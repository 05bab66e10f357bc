"""Live A/B of labelled versions: how many executions each label served, and how many succeeded.

The fleet counts a sample once it finished (its result recorded for the first
time, so a redelivered last step never counts twice), in the skillbook's
``labels:outcomes`` hash: ``LABEL:served`` for every finished sample a step
served (the head as ``head``), and ``LABEL:success`` or ``LABEL:failure`` when
its environment judged the answer against the ground truth (EvaluateStep's
``outcome``: the honest signal, not the Reflector's opinion). A sample that
failed, or that nothing judged, adds to neither. A worker that dies between
recording the result and counting leaves that one sample uncounted: the
counters may lag, they never count twice.

:func:`compare_labels` sets two labels side by side: success rate of the
judged executions, each with a 95% Wilson interval, and whether the intervals
overlap (then the data shows no significant difference).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import redis

from .keys import SkillbookKeys
from .label_names import HEAD, validate_label
from .replies import decode_int, decode_text, reading

__all__ = [
    "FAILURE",
    "SUCCESS",
    "LabelComparison",
    "LabelOutcomes",
    "compare_labels",
    "read_outcomes",
    "record_outcome",
    "wilson_interval",
]

SUCCESS = "success"
FAILURE = "failure"
SERVED = "served"
_Z95 = 1.959963984540054  # the standard normal's 97.5th percentile: a two-sided 95% interval


def _field(label: str | None, counter: str) -> str:
    return f"{label or HEAD}:{counter}"


def record_outcome(client: redis.Redis, keys: SkillbookKeys, label: str | None, outcome: str | None) -> None:
    """Count one finished execution served by ``label`` (None: the head), and its ``outcome`` if judged."""
    if outcome not in (None, SUCCESS, FAILURE):
        raise ValueError(f"an outcome is {SUCCESS!r}, {FAILURE!r} or None, got {outcome!r}")
    with client.pipeline(transaction=True) as pipe:  # the served count and its verdict together
        pipe.hincrby(keys.label_outcomes, _field(label, SERVED), 1)
        if outcome is not None:
            pipe.hincrby(keys.label_outcomes, _field(label, outcome), 1)
        pipe.execute()


@dataclass(frozen=True)
class LabelOutcomes:
    """What one label (or ``head``) served: executions, and the judged ones that succeeded or failed."""

    label: str
    served: int = 0
    success: int = 0
    failure: int = 0

    @property
    def judged(self) -> int:
        """Executions an environment judged (success + failure)."""
        return self.success + self.failure

    @property
    def success_rate(self) -> float | None:
        """Successes per judged execution; None when none was judged."""
        return self.success / self.judged if self.judged else None

    def interval(self) -> tuple[float, float] | None:
        """The 95% Wilson interval of the success rate; None when none was judged."""
        return wilson_interval(self.success, self.judged) if self.judged else None

    def to_dict(self) -> dict[str, Any]:
        """The counts, the rate and its interval as JSON."""
        interval = self.interval()
        return {
            "label": self.label,
            "served": self.served,
            "success": self.success,
            "failure": self.failure,
            "judged": self.judged,
            "success_rate": self.success_rate,
            "interval_95": list(interval) if interval is not None else None,
        }


def wilson_interval(successes: int, trials: int, z: float = _Z95) -> tuple[float, float]:
    """The Wilson score interval of ``successes`` in ``trials`` (95% by default); (0, 1) for no trials.

    Unlike the normal approximation it stays inside [0, 1] and is sound for small
    counts and rates near 0 or 1, which a canary's few executions are.
    """
    if trials <= 0:
        return 0.0, 1.0
    if not 0 <= successes <= trials:
        raise ValueError(f"{successes} successes in {trials} trials")
    p = successes / trials
    z2 = z * z
    centre = (p + z2 / (2 * trials)) / (1 + z2 / trials)
    half = z * math.sqrt(p * (1 - p) / trials + z2 / (4 * trials * trials)) / (1 + z2 / trials)
    # At a rate of 0 or 1 the bound is exactly 0 or 1; computed, it can miss by a rounding.
    low = 0.0 if successes == 0 else max(0.0, centre - half)
    high = 1.0 if successes == trials else min(1.0, centre + half)
    return low, high


def read_outcomes(client: redis.Redis, keys: SkillbookKeys) -> dict[str, LabelOutcomes]:
    """Every label's counts (``head`` for the head), by label."""
    with reading(keys.label_outcomes):
        raw = client.hgetall(keys.label_outcomes)
    counts: dict[str, dict[str, int]] = {}
    for key, value in raw.items():
        label, _, counter = decode_text(key).rpartition(":")
        if counter in (SERVED, SUCCESS, FAILURE) and label:
            counts.setdefault(label, {})[counter] = decode_int(value, keys.label_outcomes)
    return {label: LabelOutcomes(label, **counts[label]) for label in sorted(counts)}


@dataclass(frozen=True)
class LabelComparison:
    """Two labels side by side; ``overlap``: their 95% intervals overlap (no significant difference)."""

    skillbook: str
    a: LabelOutcomes
    b: LabelOutcomes

    @property
    def overlap(self) -> bool:
        """True unless both were judged and their intervals are disjoint."""
        first, second = self.a.interval(), self.b.interval()
        if first is None or second is None:
            return True  # no data on one side: nothing tells them apart
        return first[0] <= second[1] and second[0] <= first[1]

    @property
    def better(self) -> str | None:
        """The label whose success rate is significantly higher; None when the intervals overlap."""
        if self.overlap:
            return None
        assert self.a.success_rate is not None and self.b.success_rate is not None  # judged both
        return self.a.label if self.a.success_rate > self.b.success_rate else self.b.label

    def to_dict(self) -> dict[str, Any]:
        """The comparison as JSON."""
        return {
            "name": self.skillbook,
            "labels": [self.a.to_dict(), self.b.to_dict()],
            "overlap": self.overlap,
            "significant": not self.overlap,
            "better": self.better,
        }


def compare_labels(client: redis.Redis, keys: SkillbookKeys, a: str, b: str) -> LabelComparison:
    """Compare what labels ``a`` and ``b`` served (``head`` names the head); ValueError for a bad name."""
    outcomes = read_outcomes(client, keys)
    first, second = (_checked(label) for label in (a, b))
    return LabelComparison(
        keys.name,
        outcomes.get(first) or LabelOutcomes(first),
        outcomes.get(second) or LabelOutcomes(second),
    )


def _checked(label: str) -> str:
    return label if label == HEAD else validate_label(label)

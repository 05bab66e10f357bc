"""Interleaved rounds and the spread of a ratio: how the benchmarks compare two sides fairly.

A shared machine drifts while a benchmark runs (other work starts, caches warm, the CPU
throttles), so the side that always runs first meets another machine than the one after it.
Each round therefore runs every side in turn, in the opposite order every other round, and the
comparison is made within a round (one ratio per round, of figures measured side by side) and
reported as min/median/max over the rounds: a spread that says how far to trust the median.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

__all__ = ["Spread", "alternating_rounds", "ratio_spread", "round_order", "spread_text"]

T = TypeVar("T")


def round_order(sides: Sequence[T], round_number: int) -> list[T]:
    """The order round ``round_number`` (from 0) runs ``sides`` in: as given, reversed every other round."""
    return list(sides) if round_number % 2 == 0 else list(reversed(sides))


def alternating_rounds(rounds: int, sides: Mapping[str, Callable[[int], float]]) -> dict[str, list[float]]:
    """Run each side once per round, in round_order; each side's figures, one per round.

    A side is called with the round number (to name what it creates apart from other rounds).
    """
    figures: dict[str, list[float]] = {name: [] for name in sides}
    for number in range(rounds):
        for name in round_order(list(sides), number):
            figures[name].append(sides[name](number))
    return figures


@dataclass(frozen=True)
class Spread:
    """The minimum, median and maximum of some figures (one per round)."""

    min: float
    median: float
    max: float
    count: int

    @classmethod
    def of(cls, values: Sequence[float]) -> Spread:
        """The spread of ``values`` (at least one)."""
        if not values:
            raise ValueError("no figures to spread: run at least one round")
        return cls(min(values), statistics.median(values), max(values), len(values))

    def __str__(self) -> str:
        return f"min {self.min:.2f} / median {self.median:.2f} / max {self.max:.2f} over {self.count} rounds"

    def figures(self, digits: int = 2, unit: str = "") -> str:
        """The three as ``min/median/max`` with ``digits`` decimals, then ``unit``: for a table's cell."""
        return "/".join(f"{value:.{digits}f}" for value in (self.min, self.median, self.max)) + unit


def ratio_spread(numerators: Sequence[float], denominators: Sequence[float]) -> Spread | None:
    """The spread of the per-round ratios numerator / denominator; None if a denominator is 0.

    Rounds are paired in order (round k of one side with round k of the other).
    """
    if len(numerators) != len(denominators):
        raise ValueError(f"{len(numerators)} rounds against {len(denominators)}: pair them round by round")
    if not numerators or any(d == 0 for d in denominators):
        return None
    return Spread.of([n / d for n, d in zip(numerators, denominators, strict=True)])


def spread_text(spread: Spread | None) -> str:
    """The spread as a report prints it; None (no ratio could be made) said so."""
    return str(spread) if spread is not None else "none (a side measured nothing, or nothing in a round)"

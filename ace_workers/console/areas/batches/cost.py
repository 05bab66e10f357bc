"""The learning cost of recent batches: LLM tokens (and USD, where priced) per finished sample, over time.

The figures come from each batch's per-step sums (the outputs' provider usage, as the worker
metrics count it). A batch counts here once a sample of it finished; a running batch's figure
is what it spent so far over what it finished so far.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ....distributed.store.step_stats import StepStats

__all__ = ["batch_usage", "cost_points", "cost_series"]


def batch_usage(steps: Sequence[StepStats], finished: int) -> dict[str, Any]:
    """A batch's LLM usage summed over its steps, and per finished sample (None before the first)."""
    prompt = sum(step.prompt_tokens for step in steps)
    completion = sum(step.completion_tokens for step in steps)
    priced = [step.cost for step in steps if step.cost is not None]
    cost = sum(priced) if priced else None

    def per_sample(total: float | None) -> float | None:
        return None if total is None or not finished else round(total / finished, 6)

    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "tokens": prompt + completion,
        "cost": cost,
        "finished_samples": finished,
        "prompt_tokens_per_sample": per_sample(prompt),
        "completion_tokens_per_sample": per_sample(completion),
        "tokens_per_sample": per_sample(prompt + completion),
        "cost_per_sample": per_sample(cost),
    }


def cost_points(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """One point per batch with a finished sample and some usage, oldest first."""
    points = [
        {
            "batch_id": row["batch_id"],
            "skillbook": row["skillbook"],
            "created": row["created"],
            "tokens_per_sample": row["usage"]["tokens_per_sample"],
            "prompt_tokens_per_sample": row["usage"]["prompt_tokens_per_sample"],
            "completion_tokens_per_sample": row["usage"]["completion_tokens_per_sample"],
            "cost_per_sample": row["usage"]["cost_per_sample"],
        }
        for row in rows
        if row["created"] and row["usage"]["tokens_per_sample"]
    ]
    return sorted(points, key=lambda point: point["created"])


def cost_series(points: Sequence[dict[str, Any]], now: float) -> dict[str, list[dict[str, Any]]]:
    """The plots' lines, as data the page draws (x: batch start in hours from ``now``).

    ``tokens``: total, prompt and completion tokens per finished sample; ``cost``: USD per finished
    sample, empty unless some batch was priced.
    """

    def line(name: str, key: str) -> dict[str, Any]:
        return {
            "name": name,
            "points": [[round((p["created"] - now) / 3600, 4), p[key]] for p in points if p[key] is not None],
        }

    priced = any(point["cost_per_sample"] is not None for point in points)
    return {
        "tokens": [
            line("total", "tokens_per_sample"),
            line("prompt", "prompt_tokens_per_sample"),
            line("completion", "completion_tokens_per_sample"),
        ],
        "cost": [line("USD", "cost_per_sample")] if priced else [],
    }

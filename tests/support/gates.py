"""A gate for LLM clients that records what it is asked and told (providers/call_gate.py)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ace_workers.providers.call_gate import Prompt


class RecordingGate:
    """A gate that lets every attempt through and records what it was asked and told."""

    def __init__(self, refuse: BaseException | None = None) -> None:
        self.events: list[tuple[str, Any]] = []
        self.refuse = refuse

    def before(self, model: str, prompt: Prompt, max_tokens: int | None) -> str:
        self.events.append(("before", model))
        if self.refuse is not None:
            raise self.refuse
        return model

    def after(self, ticket: Any, usage: Mapping[str, int] | None, cost: float | None) -> None:
        self.events.append(("after", (ticket, dict(usage) if usage is not None else None)))

    def rate_limited(self, ticket: Any, error: BaseException) -> None:
        self.events.append(("rate_limited", ticket))

"""BrowserResult: what one browser-use run did, as the execute step records it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["BrowserResult"]


@dataclass
class BrowserResult:
    """One run of a browser-use ``Agent`` on a task.

    ``chronological_steps`` holds the run's steps in order as plain dicts
    (see :func:`~ace_workers.traces.browser_use.history.history_steps`);
    :class:`BrowserToTrace` turns them into the Reflector's trace.
    ``raw_history`` is the ``AgentHistoryList`` itself (None when the run
    raised before returning one). ``success`` is False when the agent raised,
    stopped before its ``done`` action, or reported failure in it; ``error``
    then says which.
    """

    task: str
    success: bool
    output: str
    error: str | None = None
    steps_count: int = 0
    duration_seconds: float = 0.0
    cited_skill_ids: list[str] = field(default_factory=list)
    chronological_steps: list[dict[str, Any]] = field(default_factory=list)
    raw_history: Any = None

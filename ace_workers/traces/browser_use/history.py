"""Reading a browser-use run: an ``AgentHistoryList`` as plain step dicts, its task and its outcome.

Only attributes are read, never browser-use itself imported, so a run
recorded elsewhere converts here without the extra; the saved JSON form
(``AgentHistoryList.save_to_file``, ``model_dump()``) reads the same way. A
step comes out as::

    {"step": 1, "url": ..., "title": ..., "thinking": ..., "evaluation": ..., "memory": ...,
     "next_goal": ..., "actions": [{"name": "navigate", "params": {"url": ...}}],
     "results": [{"is_done": False, "success": None, "error": None,
                  "extracted_content": ..., "long_term_memory": ...}]}

Missing or unknown fields give None or are ignored, never an error: the
library's history models change between releases.
"""

from __future__ import annotations

import json
import re
from typing import Any

from ...core.skill_ids import extract_cited_skill_ids
from ..skillbook_context import strip_skillbook_context

__all__ = [
    "history_steps",
    "is_agent_history",
    "is_saved_history",
    "recorded_task",
    "run_outcome",
    "steps_cited_skill_ids",
]

# The model's own words in each step, by the name used here and the AgentOutput field.
BRAIN_FIELDS = {
    "thinking": "thinking",
    "evaluation": "evaluation_previous_goal",
    "memory": "memory",
    "next_goal": "next_goal",
}
RESULT_FIELDS = ("is_done", "success", "error", "extracted_content", "long_term_memory")
# browser-use puts the task before every step's browser state in its state message.
_USER_REQUEST = re.compile(r"<user_request>\n?(.*?)\n?</user_request>", re.DOTALL)


def is_agent_history(value: object) -> bool:
    """True for a browser-use ``AgentHistoryList``, told by its class without importing browser-use."""
    kind = type(value)
    return kind.__module__.startswith("browser_use.") and kind.__name__.startswith("AgentHistoryList")


def is_saved_history(value: object) -> bool:
    """True for an ``AgentHistoryList`` as ``save_to_file`` writes it: an object with a list of steps."""
    return isinstance(value, dict) and isinstance(value.get("history"), list)


def history_steps(history: Any) -> list[dict[str, Any]]:
    """The steps of an ``AgentHistoryList`` (or its saved dict form) in order, as plain dicts.

    Raises:
        TypeError: ``history`` has no list of steps in a ``history`` field.
    """
    items = _field(history, "history")
    if not isinstance(items, list):
        raise TypeError(
            "a browser-use history needs a 'history' list of steps (an AgentHistoryList), "
            f"got {type(history).__name__}"
        )
    return [_step(number, item) for number, item in enumerate(items, start=1)]


def recorded_task(history: Any) -> str | None:
    """The task the run was given, read from its first state message (the skillbook context left out)."""
    items = _field(history, "history")
    for item in items if isinstance(items, list) else []:
        message = _field(item, "state_message")
        match = _USER_REQUEST.search(message) if isinstance(message, str) else None
        if match:
            return strip_skillbook_context(match.group(1).strip())
    return None


def run_outcome(steps: list[dict[str, Any]]) -> tuple[bool, str, str | None]:
    """``(success, final output, error)`` of a run from its steps.

    A run succeeded when its last action is ``done`` and does not report
    failure; the output is that action's text. A run with no ``done`` (stopped
    at max_steps, after too many failures) failed with its last error.
    """
    results = steps[-1]["results"] if steps else []
    last = results[-1] if results else {}
    if last.get("is_done"):
        output = _text(last.get("extracted_content"))
        if last.get("success") is False:
            return False, output, "the agent reported that it failed" + (f": {output}" if output else "")
        return True, output, None
    errors = [result["error"] for step in steps for result in step["results"] if result.get("error")]
    reason = f": {errors[-1]}" if errors else " (no done action)"
    return False, "", "the agent stopped before finishing the task" + reason


def steps_cited_skill_ids(steps: list[dict[str, Any]]) -> list[str]:
    """Skill ids the model cited as ``[id]`` anywhere in its thinking, goals or action parameters."""
    texts = []
    for step in steps:
        texts += [step[name] or "" for name in BRAIN_FIELDS]
        texts += [json.dumps(action["params"], ensure_ascii=False, default=str) for action in step["actions"]]
    return extract_cited_skill_ids("\n".join(texts))


def _step(number: int, item: Any) -> dict[str, Any]:
    output = _field(item, "model_output")
    state = _field(item, "state")
    results = _field(item, "result")
    actions = _field(output, "action")
    step: dict[str, Any] = {"step": number, "url": _text(_field(state, "url")) or None}
    step["title"] = _text(_field(state, "title")) or None
    step.update({name: _text(_field(output, source)) or None for name, source in BRAIN_FIELDS.items()})
    step["actions"] = [_action(action) for action in actions] if isinstance(actions, list) else []
    step["results"] = [_result(result) for result in results] if isinstance(results, list) else []
    return step


def _action(action: Any) -> dict[str, Any]:
    # An ActionModel dumps to {name: params} with only the action that was chosen set.
    dumped = _dump(action)
    if isinstance(dumped, dict) and dumped:
        name, params = next(iter(dumped.items()))
        return {"name": str(name), "params": params}
    return {"name": "action", "params": dumped if dumped is not None else repr(action)}


def _result(result: Any) -> dict[str, Any]:
    values = {name: _field(result, name) for name in RESULT_FIELDS}
    return {
        "is_done": values["is_done"] is True,
        "success": values["success"] if isinstance(values["success"], bool) else None,
        **{name: _text(values[name]) or None for name in RESULT_FIELDS[2:]},
    }


def _dump(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: item for key, item in value.items() if item is not None}
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        try:
            return dump(exclude_none=True, mode="json")
        except Exception:  # a model that cannot dump itself is still named by its repr
            return None
    return None


def _field(value: Any, name: str) -> Any:
    if value is None:
        return None
    if isinstance(value, dict):
        return value.get(name)
    return getattr(value, name, None)


def _text(value: Any) -> str:
    if value is None:
        return ""
    return value if isinstance(value, str) else str(value)

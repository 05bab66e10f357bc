"""RunRecorder: a LangChain callback handler that records each top-level run as plain events.

A top-level run is one ``invoke`` of the outermost runnable the handler was
given to (its parent is unknown to the handler). Nested runs (the model calls,
tools and retrievers inside it) become events of their top-level run, in the
order they happened. Every text is cut to ``max_step_chars`` as it is recorded,
so a run with a huge tool output costs this process a bounded amount of memory.

Importing this module imports ``langchain_core``: only code that has checked
the ``langchain`` extra imports it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler

from ...traces.trace_text import DEFAULT_MAX_STEP_CHARS, cut_text
from .values import plain, text_of

__all__ = ["RecordedRun", "RunRecorder"]


@dataclass
class RecordedRun:
    """One top-level run: its name, inputs, events in order, and how it ended."""

    run_id: str
    name: str
    inputs: Any
    events: list[dict[str, Any]] = field(default_factory=list)
    output: Any = None
    error: str | None = None
    started: float = field(default_factory=time.monotonic)
    duration_seconds: float = 0.0
    finished: bool = False


class RunRecorder(BaseCallbackHandler):
    """Records every top-level run it sees; ``on_finish`` (if given) gets each finished run.

    Thread-safe: LangChain may call a handler from several threads at once
    (``batch``, parallel branches). Finished runs are kept in ``finished``
    only when no ``on_finish`` is given.
    """

    raise_error = False  # a recording problem must never break the user's chain

    def __init__(
        self,
        on_finish: Callable[[RecordedRun], None] | None = None,
        *,
        max_step_chars: int = DEFAULT_MAX_STEP_CHARS,
    ) -> None:
        super().__init__()
        self.on_finish = on_finish
        self.max_step_chars = max_step_chars
        self.finished: list[RecordedRun] = []
        self._runs: dict[UUID, RecordedRun] = {}  # top-level run id -> its record
        self._root_of: dict[UUID, UUID] = {}  # any run id -> its top-level run id
        self._names: dict[UUID, str] = {}
        self._lock = threading.Lock()

    # -- runs starting -----------------------------------------------------------------------
    def on_chain_start(
        self, serialized: dict[str, Any] | None, inputs: Any, *, run_id: UUID, **kwargs: Any
    ) -> None:
        self._start(run_id, kwargs.get("parent_run_id"), _name(serialized, kwargs, "chain"), inputs)

    def on_chat_model_start(
        self, serialized: dict[str, Any] | None, messages: list[list[Any]], *, run_id: UUID, **kwargs: Any
    ) -> None:
        inputs = messages[0] if len(messages) == 1 else messages
        self._start_model(run_id, serialized, kwargs, inputs)

    def on_llm_start(
        self, serialized: dict[str, Any] | None, prompts: list[str], *, run_id: UUID, **kwargs: Any
    ) -> None:
        inputs = prompts[0] if len(prompts) == 1 else prompts
        self._start_model(run_id, serialized, kwargs, inputs)

    def on_tool_start(
        self, serialized: dict[str, Any] | None, input_str: str, *, run_id: UUID, **kwargs: Any
    ) -> None:
        name = _name(serialized, kwargs, "tool")
        arguments = kwargs.get("inputs") or input_str
        with self._lock:
            self._names[run_id] = name
        self._start(run_id, kwargs.get("parent_run_id"), name, arguments)
        self._event(run_id, {"type": "tool_call", "name": name, "input": self._plain(arguments)})

    def on_retriever_start(
        self, serialized: dict[str, Any] | None, query: str, *, run_id: UUID, **kwargs: Any
    ) -> None:
        self._start(run_id, kwargs.get("parent_run_id"), _name(serialized, kwargs, "retriever"), query)

    def _start_model(
        self, run_id: UUID, serialized: dict[str, Any] | None, kwargs: dict[str, Any], inputs: Any
    ) -> None:
        # The model a call went to, as the provider names it where LangChain says (else its class).
        params = kwargs.get("invocation_params") or {}
        name = params.get("model") or params.get("model_name") or _name(serialized, kwargs, "model")
        with self._lock:
            self._names[run_id] = str(name)
        self._start(run_id, kwargs.get("parent_run_id"), str(name), inputs)

    # -- what happened inside ------------------------------------------------------------------
    def on_llm_end(self, response: Any, *, run_id: UUID, **kwargs: Any) -> None:
        generation = _first_generation(response)
        message = getattr(generation, "message", None)
        text = text_of(message) if message is not None else str(getattr(generation, "text", "") or "")
        event: dict[str, Any] = {
            "type": "llm",
            "model": self._name_of(run_id, "model"),
            "text": cut_text(text, self.max_step_chars),
        }
        tool_calls = getattr(message, "tool_calls", None)
        if tool_calls:
            event["tool_calls"] = [call.get("name") for call in tool_calls if isinstance(call, dict)]
        self._event(run_id, event)
        self._end(run_id, text)

    def on_llm_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        self._event(run_id, {"type": "error", "where": "model", "error": _error_text(error)})
        self._end(run_id, None, error)

    def on_tool_end(self, output: Any, *, run_id: UUID, **kwargs: Any) -> None:
        name = self._name_of(run_id, "tool")
        self._event(run_id, {"type": "tool_result", "name": name, "output": self._text(output)})
        self._end(run_id, output)

    def on_tool_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        name = self._name_of(run_id, "tool")
        self._event(run_id, {"type": "tool_error", "name": name, "error": _error_text(error)})
        self._end(run_id, None, error)

    def on_retriever_end(self, documents: Any, *, run_id: UUID, **kwargs: Any) -> None:
        pages = [self._text(document) for document in documents or []]
        self._event(run_id, {"type": "retrieval", "documents": pages})
        self._end(run_id, pages)

    def on_retriever_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        self._event(run_id, {"type": "error", "where": "retriever", "error": _error_text(error)})
        self._end(run_id, None, error)

    def on_chain_end(self, outputs: Any, *, run_id: UUID, **kwargs: Any) -> None:
        self._end(run_id, outputs)

    def on_chain_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        self._end(run_id, None, error)

    # -- bookkeeping ---------------------------------------------------------------------------
    def _start(self, run_id: UUID, parent_run_id: UUID | None, name: str, inputs: Any) -> None:
        with self._lock:
            root = self._root_of.get(parent_run_id) if parent_run_id is not None else None
            if root is not None and root in self._runs:
                self._root_of[run_id] = root
                return
            # No parent this handler knows: the outermost run it was given to.
            self._root_of[run_id] = run_id
            self._runs[run_id] = RecordedRun(str(run_id), name, self._plain(inputs))

    def _event(self, run_id: UUID, event: dict[str, Any]) -> None:
        with self._lock:
            run = self._runs.get(self._root_of.get(run_id, run_id))
            if run is not None:
                run.events.append(event)

    def _end(self, run_id: UUID, output: Any, error: BaseException | None = None) -> None:
        with self._lock:
            self._names.pop(run_id, None)
            if self._root_of.get(run_id) != run_id:
                self._root_of.pop(run_id, None)
                return
            run = self._runs.pop(run_id)
            del self._root_of[run_id]
            # A nested run the top-level run never saw end (an abandoned stream) must not leak.
            for child in [child for child, root in self._root_of.items() if root == run_id]:
                del self._root_of[child]
            run.output = output
            run.error = _error_text(error) if error is not None else None
            run.duration_seconds = time.monotonic() - run.started
            run.finished = True
            if self.on_finish is None:
                self.finished.append(run)
        if self.on_finish is not None:
            self.on_finish(run)

    def _name_of(self, run_id: UUID, default: str) -> str:
        with self._lock:
            return self._names.get(run_id, default)

    def _plain(self, value: Any) -> Any:
        return plain(value, self.max_step_chars)

    def _text(self, value: Any) -> str:
        return cut_text(text_of(value), self.max_step_chars)


def _name(serialized: dict[str, Any] | None, kwargs: dict[str, Any], default: str) -> str:
    name = kwargs.get("name") or (serialized or {}).get("name")
    if not name and serialized and isinstance(serialized.get("id"), list) and serialized["id"]:
        name = serialized["id"][-1]
    return str(name or default)


def _first_generation(response: Any) -> Any:
    generations = getattr(response, "generations", None) or [[]]
    first = generations[0] if generations else []
    return first[0] if first else None


def _error_text(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}"

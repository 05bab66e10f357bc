"""AceCallbackHandler: every top-level run of a LangChain app becomes a trace the workers learn from.

Add it to a chain's callbacks (``chain.invoke(x, config={"callbacks": [handler]})``
or ``chain.with_config(callbacks=[handler])``). Each finished top-level run is
converted to the Reflector's trace dict in this process and sent with
``producer.enqueue_traces`` by a background thread, ``batch_size`` traces per
batch, so the chain never waits for Redis.

A failing Redis never breaks the user's chain: the failure is logged and
counted, and the traces stay in a bounded buffer (``max_pending``; past it the
oldest is dropped, logged and counted) for the next send or :meth:`flush`. A
send that failed after the producer stored its batch is not sent twice: the
next send finds the batch and finishes sending it instead.

A handler given ``support@prod`` learns into ``support``'s head and serves label
``prod``: :meth:`AceCallbackHandler.served_skillbook` reads that version for the
app's prompt, and each trace records the version and label it last served
(``served_version``, ``served_label``).

Importing this module imports ``langchain_core``.
"""

from __future__ import annotations

import atexit
import itertools
import logging
import threading
import uuid
import weakref
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ...counts import counted
from ...distributed.producer.producer import BatchHandle
from ...distributed.readers import ServedSkillbook, read_served
from ...distributed.store.batches import BatchState
from ...distributed.store.label_names import parse_skillbook_ref
from ...distributed.worker.errors import PayloadError
from ...distributed.worker.payload import check_trace
from ...traces.langchain.to_trace import langchain_result_to_trace
from ...traces.trace_text import DEFAULT_MAX_STEP_CHARS
from .inputs import task_of
from .outputs import make_result
from .recorder import RecordedRun, RunRecorder

if TYPE_CHECKING:
    from ...distributed.producer import Producer

__all__ = ["AceCallbackHandler", "HandlerStats"]

logger = logging.getLogger(__name__)


@dataclass
class HandlerStats:
    """What the handler did: runs seen, traces sent, failed sends, traces dropped or refused."""

    runs: int = 0
    sent: int = 0
    batches: int = 0
    failed_sends: int = 0
    dropped: int = 0
    refused: int = 0


class AceCallbackHandler(RunRecorder):
    """A LangChain ``BaseCallbackHandler`` that enqueues each top-level run as a trace.

    Sending happens on a background thread of the handler's own, so the user's
    chain never waits for Redis, even when Redis hangs. Call :meth:`close` (or
    use the handler as a context manager) at shutdown: it sends what is pending.

    Args:
        producer: where traces go (:class:`~ace_workers.distributed.producer.Producer`).
        skillbook: the skillbook the workers learn into; ``NAME@LABEL``: learn into NAME's head,
            serve LABEL's version (:meth:`served_skillbook`).
        recipe: the workers' chain for the traces (``trace_analyser``: reflect and learn).
        batch_size: the fewest traces a batch is sent with (fewer wait for more runs, or for
            :meth:`flush`); a send takes every pending trace, up to ACE_MAX_BATCH_SIZE.
        max_pending: traces kept while Redis is unreachable; past it the oldest go.
        retry_seconds: the wait before sending again after a failed send.
        output_parser: the run's output as answer text (default: as LangChainExecuteStep).
        input_key: the prompt variable holding the task in dict inputs.
    """

    def __init__(
        self,
        producer: Producer,
        skillbook: str,
        *,
        recipe: str = "trace_analyser",
        batch_size: int = 1,
        max_pending: int = 1000,
        retry_seconds: float = 5.0,
        output_parser: Callable[[Any], str] | None = None,
        input_key: str = "input",
        max_step_chars: int = DEFAULT_MAX_STEP_CHARS,
    ) -> None:
        self.ref = parse_skillbook_ref(skillbook)
        if batch_size < 1 or max_pending < batch_size:
            raise ValueError(
                f"AceCallbackHandler needs 1 <= batch_size <= max_pending, got {batch_size} and {max_pending}"
            )
        super().__init__(self._finished, max_step_chars=max_step_chars)
        self.producer = producer
        self.skillbook = self.ref.name  # where the traces are learned: the head
        self.recipe = recipe
        self._served: ServedSkillbook | None = None
        self.batch_size = batch_size
        self.retry_seconds = retry_seconds
        self.output_parser = output_parser
        self.input_key = input_key
        self.stats = HandlerStats()
        self.handles: list[BatchHandle] = []
        self._pending: deque[dict[str, Any]] = deque(maxlen=max_pending)
        self._pending_lock = threading.Lock()  # the buffer: held for microseconds, never while sending
        self._send_lock = threading.Lock()  # one send at a time: the sender thread's or flush()'s
        self._unconfirmed: tuple[str, list[dict[str, Any]]] | None = None  # a failed send's batch id, traces
        self._wake = threading.Event()
        self._closed = threading.Event()
        self._sender: threading.Thread | None = None

    def served_skillbook(self) -> ServedSkillbook:
        """The version the app puts in its prompt: the label's (or ACE_SERVE_LABEL's, else the head's).

        Each trace sent after this records that version and label.
        """
        store = self.producer.runtime.store(self.ref.name)
        self._served = read_served(store, self.ref.label or self.producer.settings.serve_label)
        return self._served

    @property
    def pending(self) -> int:
        """Traces waiting to be sent."""
        return len(self._pending)

    def flush(self) -> bool:
        """Send every pending trace now, in this thread; True when none is left (False: a send failed,
        the traces are kept)."""
        while self._pending:
            if not self._send():
                return False
        return True

    def close(self) -> bool:
        """Stop the sender thread and send what is pending; True when nothing was left unsent."""
        self._closed.set()
        self._wake.set()
        if self._sender is not None:
            self._sender.join()
        return self.flush()

    def __enter__(self) -> AceCallbackHandler:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- a run finished --------------------------------------------------------------------
    def _finished(self, run: RecordedRun) -> None:
        try:
            trace = self._trace(run)
            check_trace(trace, max_bytes=self.producer.settings.max_trace_bytes)
        except (PayloadError, ValueError, TypeError) as exc:
            with self._pending_lock:
                self.stats.runs += 1
                self.stats.refused += 1
            logger.error("AceCallbackHandler: the trace of run %s cannot be sent: %s", run.run_id, exc)
            return
        with self._pending_lock:
            self.stats.runs += 1
            if len(self._pending) == self._pending.maxlen:
                self.stats.dropped += 1
                logger.warning(
                    "AceCallbackHandler: %d traces are waiting for Redis; the oldest was dropped",
                    len(self._pending),
                )
            self._pending.append(trace)
            ready = len(self._pending) >= self.batch_size
        if ready and not self._closed.is_set():
            self._start_sender()
            self._wake.set()

    def _trace(self, run: RecordedRun) -> dict[str, Any]:
        result = make_result(
            task_of(run.inputs, self.input_key),
            run.output,
            error=run.error,
            events=run.events,
            duration_seconds=run.duration_seconds,
            output_parser=self.output_parser,
        )
        trace = langchain_result_to_trace(result)
        trace["run_id"] = run.run_id
        trace["runnable"] = run.name
        served = self._served
        if served is not None:
            trace.update(served.trace_fields())
        return trace

    # -- sending -------------------------------------------------------------------------------
    def _start_sender(self) -> None:
        with self._pending_lock:
            if self._sender is None:
                self._sender = threading.Thread(
                    target=self._send_in_background, name="ace-trace-sender", daemon=True
                )
                self._sender.start()
                atexit.register(_close_at_exit, weakref.ref(self))

    def _send_in_background(self) -> None:
        while not self._closed.is_set():
            self._wake.wait()
            self._wake.clear()
            while not self._closed.is_set() and self.pending >= self.batch_size:
                if not self._send():
                    self._closed.wait(self.retry_seconds)  # Redis is failing: do not hammer it

    def _send(self) -> bool:
        """Send the oldest pending traces as one batch (at most ACE_MAX_BATCH_SIZE); False on failure."""
        with self._send_lock:
            try:
                self._settle_unconfirmed()
                with self._pending_lock:
                    traces = list(itertools.islice(self._pending, self.producer.settings.max_batch_size))
                if not traces:
                    return True  # they were the traces of the send in doubt, now finished
                batch_id = uuid.uuid4().hex
                self._unconfirmed = (batch_id, traces)
                handle = self.producer.enqueue_traces(
                    traces, self.skillbook, recipe=self.recipe, batch_id=batch_id
                )
            except Exception as exc:  # Redis down, or anything else: the user's chain goes on
                self.stats.failed_sends += 1
                logger.warning(
                    "AceCallbackHandler: could not send %s to skillbook %r (%s: %s); kept for the next send",
                    counted(self.pending, "trace"),
                    self.skillbook,
                    type(exc).__name__,
                    exc,
                )
                return False
            self._unconfirmed = None
            self._confirm(traces)
            self.handles.append(handle)
            return True

    def _settle_unconfirmed(self) -> None:
        """Find out what became of a send that failed: stored batches are finished, not sent again."""
        if self._unconfirmed is None:
            return
        batch_id, traces = self._unconfirmed
        batches = self.producer.runtime.batches
        if batches.exists(batch_id):
            status = batches.status(batch_id)
            if status.fully_stored and status.state is not BatchState.CANCELLED:
                self.producer.resume(batch_id)
                self._unconfirmed = None
                self._confirm(traces)
                self.handles.append(BatchHandle(batch_id, self.producer.runtime, self.producer.dispatcher))
                return
            if status.state is not BatchState.CANCELLED:
                batches.cancel(batch_id)  # half stored: drop it, its traces go out anew
        self._unconfirmed = None

    def _confirm(self, traces: list[dict[str, Any]]) -> None:
        # By identity: runs went on appending, and may have dropped the oldest, during the send.
        sent = {id(trace) for trace in traces}
        with self._pending_lock:
            kept = [trace for trace in self._pending if id(trace) not in sent]
            self._pending.clear()
            self._pending.extend(kept)
        self.stats.sent += len(traces)
        self.stats.batches += 1

    def __repr__(self) -> str:
        return f"AceCallbackHandler(skillbook={self.skillbook!r}, pending={self.pending})"


def _close_at_exit(handler: weakref.ref[AceCallbackHandler]) -> None:
    """At interpreter exit, send what a handler still holds (daemon threads die with the interpreter)."""
    alive = handler()
    if alive is not None and not alive._closed.is_set():
        alive.close()

"""Sessions of the MCP server: per-conversation state that expires when unused."""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .errors import UnknownSessionError

__all__ = ["LastAsk", "Session", "SessionStore"]


@dataclass(frozen=True)
class LastAsk:
    """The session's last ace.ask: what ace.learn.feedback learns from."""

    question: str
    context: str
    answer: str
    reasoning: str
    skill_ids: list[str]


@dataclass
class Session:
    """One conversation: its last ask and its back end's state (the local ACELiteLLM)."""

    id: str
    state: Any
    last_ask: LastAsk | None = None
    # One call at a time per session: an ask must not race a learn on the same skillbook.
    lock: threading.Lock = field(default_factory=threading.Lock)


class SessionStore:
    """Sessions by id, forgotten after ``ttl_seconds`` unused; at most ``max_sessions`` (LRU)."""

    def __init__(
        self,
        new_state: Callable[[], Any],
        *,
        ttl_seconds: float,
        max_sessions: int,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._new_state = new_state
        self._ttl = ttl_seconds
        self._max = max_sessions
        self._clock = clock
        self._lock = threading.Lock()
        self._sessions: OrderedDict[str, tuple[Session, float]] = OrderedDict()

    def open(self, session_id: str) -> Session:
        """The session ``session_id``, created when it does not exist (or expired)."""
        with self._lock:
            self._expire()
            entry = self._sessions.get(session_id)
            session = entry[0] if entry else Session(session_id, self._new_state())
            self._touch(session)
            while len(self._sessions) > self._max:
                self._sessions.popitem(last=False)
            return session

    def existing(self, session_id: str) -> Session:
        """The live session ``session_id``; UnknownSessionError when there is none."""
        with self._lock:
            self._expire()
            entry = self._sessions.get(session_id)
            if entry is None:
                raise UnknownSessionError(
                    f"session {session_id!r} does not exist or expired (sessions unused for "
                    f"{self._ttl:g} s are forgotten); call ace.ask with it first"
                )
            self._touch(entry[0])
            return entry[0]

    def __len__(self) -> int:
        with self._lock:
            self._expire()
            return len(self._sessions)

    def _touch(self, session: Session) -> None:
        self._sessions[session.id] = (session, self._clock())
        self._sessions.move_to_end(session.id)

    def _expire(self) -> None:
        cutoff = self._clock() - self._ttl
        while self._sessions:
            _, (_, used) = next(iter(self._sessions.items()))
            if used > cutoff:
                return
            self._sessions.popitem(last=False)

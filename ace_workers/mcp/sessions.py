"""Sessions of the MCP server: per-conversation state, owned by one connection, that expires when unused.

A session's id is chosen by the client, so anyone can name it; the connection that
opened it (the stdio peer, or one HTTP connection's MCP session id) owns it, and
any other connection naming it is refused rather than shown or given its state.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .errors import SessionNotYoursError, UnknownSessionError

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
    """One conversation: its owner, its last ask and its back end's state (the local ACELiteLLM)."""

    id: str
    owner: str
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

    def open(self, session_id: str, owner: str) -> Session:
        """``owner``'s session ``session_id``, created when it does not exist (or expired).

        Raises:
            SessionNotYoursError: another connection opened ``session_id``.
        """
        with self._lock:
            self._expire()
            entry = self._sessions.get(session_id)
            session = entry[0] if entry else Session(session_id, owner, self._new_state())
            self._check_owner(session, owner)
            self._touch(session)
            while len(self._sessions) > self._max:
                self._sessions.popitem(last=False)
            return session

    def existing(self, session_id: str, owner: str) -> Session:
        """``owner``'s live session ``session_id``.

        Raises:
            UnknownSessionError: there is none (or it expired).
            SessionNotYoursError: another connection opened it.
        """
        with self._lock:
            self._expire()
            entry = self._sessions.get(session_id)
            if entry is None:
                raise UnknownSessionError(
                    f"session {session_id!r} does not exist or expired (sessions unused for "
                    f"{self._ttl:g} s are forgotten); call ace.ask with it first"
                )
            self._check_owner(entry[0], owner)
            self._touch(entry[0])
            return entry[0]

    def __len__(self) -> int:
        with self._lock:
            self._expire()
            return len(self._sessions)

    @staticmethod
    def _check_owner(session: Session, owner: str) -> None:
        if session.owner != owner:
            raise SessionNotYoursError(
                f"session {session.id!r} belongs to another connection; choose another session_id"
            )

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

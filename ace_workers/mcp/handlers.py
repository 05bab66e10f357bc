"""MCPHandlers: the tools' checks (sizes, sessions, paths, read-only), then the back end.

Handlers are synchronous and thread-safe; the server runs each call in a
worker thread. Each takes the request, ``owner``, the connection calling
(see :mod:`.sessions`), which alone may use the sessions it opened, and
``caller``, the scope of the credential the call came with (an API key's
tenant and role; the operator's token, stdio and --no-auth are fleet-wide
admins). On the fleet every tool checks the caller may use the served
skillbook with the role it needs (:data:`TOOL_ROLES`) before anything runs.
Every failure leaves as an :class:`MCPToolError` whose message names the
problem; nothing is changed by a refused call.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, TypeVar

from ..distributed.tenancy.api_keys import Scope, authorize, visible_skillbooks
from ..distributed.tenancy.errors import ScopeError
from ..errors import SkillbookFormatError
from ..operations import FleetClient, Principal
from ..operations.access import READ
from ..operations.labels import MOVE_ROLE
from ..operations.lifecycle import CHANGE_ROLE
from ..operations.outcomes import UNEXPECTED, outcome_of
from ..operations.review import DECIDE_ROLE
from .backend import MCPBackend
from .config import MCPServerConfig
from .errors import (
    BackendError,
    InvalidToolRequest,
    MCPToolError,
    OperationRefusedError,
    ReadOnlyError,
    ScopeRefusedError,
)
from .forget_tool import ForgetRequest, ForgetResponse, forget_traces
from .models import (
    AskRequest,
    AskResponse,
    LearnFeedbackRequest,
    LearnFeedbackResponse,
    LearnSampleRequest,
    LearnSampleResponse,
    SkillbookGetRequest,
    SkillbookGetResponse,
    SkillbookListRequest,
    SkillbookListResponse,
    SkillbookLoadRequest,
    SkillbookLoadResponse,
    SkillbookSaveRequest,
    SkillbookSaveResponse,
)
from .paths import path_in_directory, writable_path
from .review_tools import (
    LabelMoveResponse,
    LabelSetRequest,
    ReviewApproveRequest,
    ReviewDecisionResponse,
    ReviewListRequest,
    ReviewListResponse,
    ReviewRejectRequest,
    SkillChangeRequest,
    SkillChangeResponse,
    change_skills,
    decide_proposal,
    list_proposals,
    set_label,
)
from .sessions import Session, SessionStore

__all__ = ["MCPHandlers", "TOOL_ROLES"]

logger = logging.getLogger(__name__)
ResponseT = TypeVar("ResponseT")

# The role an API key needs for each tool, on the skillbook the server serves: reading needs
# read; learning learn, and so does saving (it writes a file on the server); review decisions
# review; replacing the skillbook admin.
# The steering tools' roles are their operations' (which check them).
TOOL_ROLES = {
    "ace.ask": "read",
    "ace.learn.sample": "learn",
    "ace.learn.feedback": "learn",
    "ace.skillbook.get": "read",
    "ace.skillbook.list": "read",
    "ace.skillbook.save": "learn",
    "ace.skillbook.load": "admin",
    "ace.review.list": READ,
    "ace.review.approve": DECIDE_ROLE,
    "ace.review.reject": DECIDE_ROLE,
    "ace.label.set": MOVE_ROLE,
    "ace.skill.change": CHANGE_ROLE,
    "ace.forget": "admin",  # the operation checks it (a tenant's admin forgets within its tenant)
}
# Proposals, labels and versions exist where the skillbook is the fleet's, in Redis.
_NO_FLEET = (
    "the review, label, lifecycle and forget tools need the fleet back end (ACE_MCP_BACKEND=fleet, or "
    "ACE_REDIS_URL): an in-process session's skillbook applies what it learns at once"
)
SteeringT = TypeVar("SteeringT")


class MCPHandlers:
    """Guards and delegation for the tools; one instance per server."""

    def __init__(self, backend: MCPBackend, config: MCPServerConfig) -> None:
        self.backend = backend
        self.config = config
        self.directory = config.directory()
        self.sessions = SessionStore(
            backend.new_session_state,
            ttl_seconds=config.session_ttl_seconds,
            max_sessions=config.max_sessions,
        )

    # -- the tools ------------------------------------------------------------------------
    def ask(self, request: AskRequest, owner: str, caller: Scope) -> AskResponse:
        self._authorize(caller, "ace.ask")
        self._check_text(question=request.question, context=request.context)
        return self._run(self.sessions.open(request.session_id, owner), self.backend.ask, request)

    def learn_sample(self, request: LearnSampleRequest, owner: str, caller: Scope) -> LearnSampleResponse:
        self._refuse_if_read_only("ace.learn.sample")
        self._authorize(caller, "ace.learn.sample")
        if len(request.samples) > self.config.max_samples:
            raise InvalidToolRequest(
                f"samples: {len(request.samples)} given, at most {self.config.max_samples} per call "
                "(ACE_MCP_MAX_SAMPLES)"
            )
        for index, sample in enumerate(request.samples):
            self._check_text(
                where=f"samples[{index}].",
                question=sample.question,
                context=sample.context,
                ground_truth=sample.ground_truth or "",
            )
        session = self.sessions.open(request.session_id, owner)
        return self._run(session, self.backend.learn_samples, request)

    def learn_feedback(
        self, request: LearnFeedbackRequest, owner: str, caller: Scope
    ) -> LearnFeedbackResponse:
        self._refuse_if_read_only("ace.learn.feedback")
        self._authorize(caller, "ace.learn.feedback")
        self._check_text(feedback=request.feedback, ground_truth=request.ground_truth or "")
        session = self.sessions.existing(request.session_id, owner)
        if session.last_ask is None:
            raise InvalidToolRequest(
                f"session {request.session_id!r} has asked nothing yet: ace.learn.feedback learns "
                "from the session's last ace.ask"
            )
        return self._run(session, self.backend.learn_feedback, request)

    def get_skillbook(self, request: SkillbookGetRequest, owner: str, caller: Scope) -> SkillbookGetResponse:
        self._authorize(caller, "ace.skillbook.get")
        session = self.sessions.open(request.session_id, owner)
        return self._run(session, self.backend.get_skillbook, request)

    def save_skillbook(
        self, request: SkillbookSaveRequest, owner: str, caller: Scope
    ) -> SkillbookSaveResponse:
        # Saving writes a file: read-only refuses it too.
        self._refuse_if_read_only("ace.skillbook.save")
        self._authorize(caller, "ace.skillbook.save")
        path = writable_path(self.directory, request.path, overwrite=request.overwrite)
        return self._run(self.sessions.open(request.session_id, owner), self.backend.save_skillbook, path)

    def load_skillbook(
        self, request: SkillbookLoadRequest, owner: str, caller: Scope
    ) -> SkillbookLoadResponse:
        self._refuse_if_read_only("ace.skillbook.load")
        self._authorize(caller, "ace.skillbook.load")
        path = path_in_directory(self.directory, request.path)
        return self._run(self.sessions.open(request.session_id, owner), self.backend.load_skillbook, path)

    # The review tools name no session: they read and decide the shared skillbook's proposals.
    def list_skillbooks(
        self, request: SkillbookListRequest, owner: str, caller: Scope
    ) -> SkillbookListResponse:
        """The fleet's skillbooks the caller's tenant owns (all of them for an operator)."""
        names = self._guarded(
            "ace.skillbook.list",
            lambda _: visible_skillbooks(caller, self.backend.skillbook_names(), self.backend.tenant_map()),
            request,
        )
        return SkillbookListResponse(
            tenant=caller.tenant,
            role=caller.role,
            served=self.backend.scoped_skillbook() or "session",
            skillbooks=names[: request.limit],
        )

    # The steering tools: each calls its operation, which authorizes the caller, once.
    def review_list(
        self, request: ReviewListRequest, owner: str, caller: Scope, actor: str
    ) -> ReviewListResponse:
        return self._operate("ace.review.list", list_proposals, request, caller, actor)

    def review_approve(
        self, request: ReviewApproveRequest, owner: str, caller: Scope, actor: str
    ) -> ReviewDecisionResponse:
        self._refuse_if_read_only("ace.review.approve")
        return self._operate("ace.review.approve", decide_proposal, request, caller, actor)

    def review_reject(
        self, request: ReviewRejectRequest, owner: str, caller: Scope, actor: str
    ) -> ReviewDecisionResponse:
        self._refuse_if_read_only("ace.review.reject")
        return self._operate("ace.review.reject", decide_proposal, request, caller, actor)

    def label_set(self, request: LabelSetRequest, owner: str, caller: Scope, actor: str) -> LabelMoveResponse:
        self._refuse_if_read_only("ace.label.set")
        return self._operate("ace.label.set", set_label, request, caller, actor)

    def skill_change(
        self, request: SkillChangeRequest, owner: str, caller: Scope, actor: str
    ) -> SkillChangeResponse:
        self._refuse_if_read_only("ace.skill.change")
        return self._operate("ace.skill.change", change_skills, request, caller, actor)

    def forget(self, request: ForgetRequest, owner: str, caller: Scope, actor: str) -> ForgetResponse:
        self._refuse_if_read_only("ace.forget")
        response: ForgetResponse = self._operate("ace.forget", forget_traces, request, caller, actor)
        return response

    def close(self) -> None:
        """Release the back end's connections."""
        self.backend.close()

    # -- guards ---------------------------------------------------------------------------
    def _check_text(self, where: str = "", **fields: str) -> None:
        limit = self.config.max_text_chars
        for name, text in fields.items():
            if len(text) > limit:
                raise InvalidToolRequest(
                    f"{where}{name}: {len(text)} characters, at most {limit} allowed (ACE_MCP_MAX_TEXT_CHARS)"
                )

    def _refuse_if_read_only(self, tool: str) -> None:
        if self.config.read_only:
            raise ReadOnlyError(
                f"{tool} writes (a skillbook or a file), and this server is read-only "
                "(--read-only, ACE_MCP_READ_ONLY)"
            )

    def _authorize(self, caller: Scope, tool: str) -> None:
        """ScopeRefusedError unless ``caller`` may use the served skillbook as ``tool`` needs."""
        skillbook = self.backend.scoped_skillbook()
        if skillbook is None:  # in process: no tenants, and only the server's own token gets in
            return
        try:
            authorize(
                caller,
                TOOL_ROLES[tool],
                skillbook,
                self._guarded(tool, lambda _: self.backend.tenant_map(), None),
            )
        except ScopeError as exc:
            raise ScopeRefusedError(str(exc)) from None

    def _operate(
        self,
        tool: str,
        call: Callable[[FleetClient, Principal, str, Any], SteeringT],
        request: Any,
        caller: Scope,
        actor: str,
    ) -> SteeringT:
        """``call`` on the served skillbook as the caller; a refusal answered by its outcome_of row."""
        fleet, skillbook = self.backend.fleet(), self.backend.scoped_skillbook()
        if fleet is None or skillbook is None:
            raise InvalidToolRequest(_NO_FLEET)
        principal = Principal(actor, caller.tenant, caller.role, caller.key_id)
        try:
            return call(fleet, principal, skillbook, request)
        except Exception as exc:
            outcome = outcome_of(exc)
            if outcome is UNEXPECTED:  # a bug: the client gets the cause, the log the traceback
                logger.exception("MCP tool %s failed", tool)
            raise OperationRefusedError(str(exc), outcome.mcp_code, outcome.kind) from exc

    @staticmethod
    def _guarded(tool: str, call: Callable[[Any], ResponseT], argument: Any) -> ResponseT:
        try:
            return call(argument)
        except MCPToolError:
            raise
        except Exception as exc:  # the tool boundary: the client gets the cause, the log the traceback
            logger.exception("MCP tool %s failed", tool)
            raise BackendError(f"{type(exc).__name__}: {exc}") from exc

    @staticmethod
    def _run(session: Session, call: Callable[[Session, Any], ResponseT], argument: Any) -> ResponseT:
        with session.lock:
            try:
                return call(session, argument)
            except MCPToolError:
                raise
            except SkillbookFormatError as exc:  # the file the client named is not a skillbook
                raise InvalidToolRequest(str(exc)) from exc
            except Exception as exc:  # the tool boundary: the client gets the cause, the log the traceback
                logger.exception("MCP tool call failed in session %s", session.id)
                raise BackendError(f"{type(exc).__name__}: {exc}") from exc

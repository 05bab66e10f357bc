"""The in-process back end: an ACELiteLLM per session, its skillbook in memory."""

from __future__ import annotations

from pathlib import Path

from ..core.environments import Sample
from ..distributed.tenancy.tenants import TenantMap
from ..protocols import LLMClientLike
from ..runners.ace_litellm import ACELiteLLM
from .backend import skill_items
from .errors import InvalidToolRequest
from .models import (
    AskRequest,
    AskResponse,
    LearnFeedbackRequest,
    LearnFeedbackResponse,
    LearnSampleRequest,
    LearnSampleResponse,
    SkillbookGetRequest,
    SkillbookGetResponse,
    SkillbookLoadResponse,
    SkillbookSaveResponse,
)
from .sessions import LastAsk, Session

__all__ = ["LocalBackend"]


class LocalBackend:
    """Each session learns into a skillbook of its own, in this process (ACELiteLLM's methods)."""

    name = "local"

    def __init__(self, llm: LLMClientLike) -> None:
        self.llm = llm

    def new_session_state(self) -> ACELiteLLM:
        return ACELiteLLM(self.llm)

    def ask(self, session: Session, request: AskRequest) -> AskResponse:
        ace: ACELiteLLM = session.state
        answer = ace.ask(request.question, request.context)
        last = ace.last_output
        assert last is not None  # ask() just set it
        session.last_ask = LastAsk(
            request.question, request.context, answer, last.reasoning, list(last.skill_ids)
        )
        return AskResponse(
            session_id=session.id,
            answer=answer,
            reasoning=last.reasoning,
            cited_skill_ids=list(last.skill_ids),
            skill_count=len(ace.skillbook),
        )

    def learn_samples(self, session: Session, request: LearnSampleRequest) -> LearnSampleResponse:
        ace: ACELiteLLM = session.state
        before = len(ace.skillbook)
        samples = [Sample(s.question, s.context, s.ground_truth, dict(s.metadata)) for s in request.samples]
        results = ace.learn(samples, epochs=request.epochs, wait=True)
        failed = sum(1 for r in results if not r.ok)
        return LearnSampleResponse(
            session_id=session.id,
            queued=len(results),
            processed=len(results) - failed,
            failed=failed,
            skill_count_before=before,
            skill_count_after=len(ace.skillbook),
        )

    def learn_feedback(self, session: Session, request: LearnFeedbackRequest) -> LearnFeedbackResponse:
        ace: ACELiteLLM = session.state
        before = len(ace.skillbook)
        learned = ace.learn_from_feedback(request.feedback, request.ground_truth)
        return LearnFeedbackResponse(
            session_id=session.id,
            learned=learned,
            skill_count_before=before,
            skill_count_after=len(ace.skillbook),
        )

    def get_skillbook(self, session: Session, request: SkillbookGetRequest) -> SkillbookGetResponse:
        ace: ACELiteLLM = session.state
        return SkillbookGetResponse(
            session_id=session.id,
            skillbook="session",
            stats=ace.skillbook.stats(),
            skills=skill_items(ace.skillbook, request),
        )

    def save_skillbook(self, session: Session, path: Path) -> SkillbookSaveResponse:
        ace: ACELiteLLM = session.state
        ace.save(path)
        return SkillbookSaveResponse(
            session_id=session.id, path=str(path), saved_skill_count=len(ace.skillbook)
        )

    def load_skillbook(self, session: Session, path: Path) -> SkillbookLoadResponse:
        ace: ACELiteLLM = session.state
        if not path.is_file():
            raise InvalidToolRequest(f"no skillbook file {path.name!r} in the skillbook directory")
        ace.load(path)
        return SkillbookLoadResponse(session_id=session.id, path=str(path), skill_count=len(ace.skillbook))

    def fleet(self) -> None:
        """None: an in-process session's skillbook has no proposals, labels or versions to steer."""
        return None

    def scoped_skillbook(self) -> None:
        """None: each session's skillbook is its own, and no API key reaches this back end."""
        return None

    def tenant_map(self) -> TenantMap:
        return TenantMap()

    def skillbook_names(self) -> list[str]:
        return []

    def api_keys(self) -> None:
        """None: API keys live in the fleet's Redis; in process only the server's token is accepted."""
        return None

    def close(self) -> None:
        """Nothing to release: the skillbooks live and die with their sessions."""

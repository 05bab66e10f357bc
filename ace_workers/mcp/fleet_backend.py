"""The fleet back end: learning goes to the workers, the skillbook is the versioned one in Redis.

Every session reads and teaches the same skillbook (``ACE_MCP_SKILLBOOK``), so
many assistants share what any of them learned. Answers are computed here,
with the Agent model of the worker settings, on the skillbook's current version;
or, for ``NAME@LABEL``, on the version label LABEL points at (reads, saves and
the agent of learned samples too), while learning writes NAME's head. Loading
a file would write the label's skillbook: refused (LabelWriteError).
"""

from __future__ import annotations

from pathlib import Path

from ..core.context import SkillbookView
from ..core.environments import Sample
from ..core.skillbook import Skillbook
from ..distributed.producer import Producer
from ..distributed.settings import WorkerSettings
from ..distributed.store.label_names import parse_skillbook_ref
from ..distributed.store.store import list_skillbooks
from ..distributed.tenancy.api_keys import ApiKeys
from ..distributed.tenancy.tenants import TenantMap
from ..operations import FleetClient
from ..roles import Agent
from .backend import skill_items
from .errors import BackendError, InvalidToolRequest, LabelWriteError
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

__all__ = ["FleetBackend"]


class FleetBackend:
    """Serve the tools from the fleet's Redis skillbook ``skillbook``, learning through a Producer."""

    name = "fleet"

    def __init__(self, settings: WorkerSettings, skillbook: str, *, wait_seconds: float) -> None:
        self.producer = Producer(settings)
        self.ref = parse_skillbook_ref(skillbook)  # NAME, or NAME@LABEL: served by LABEL
        self.skillbook_name = self.ref.name
        self.wait_seconds = wait_seconds
        self.agent = Agent(self.producer.runtime.llm(settings.agent_model))
        # The steering tools' operations, over the runtime's Redis connection.
        self._fleet = FleetClient.sharing(self.producer.runtime.redis, settings)

    def new_session_state(self) -> None:
        return None

    def _active_skills(self) -> int:
        return self.producer.runtime.store(self.skillbook_name).active_skills()

    def _served(self) -> tuple[int, SkillbookView]:
        """The version readers are served (the label's, else the head's) and its read-only view."""
        return self.producer.runtime.store(self.skillbook_name).snapshot_of(self.ref.label)

    def ask(self, session: Session, request: AskRequest) -> AskResponse:
        _, view = self._served()
        output = self.agent.generate(question=request.question, context=request.context, skillbook=view)
        session.last_ask = LastAsk(
            request.question, request.context, output.final_answer, output.reasoning, list(output.skill_ids)
        )
        return AskResponse(
            session_id=session.id,
            answer=output.final_answer,
            reasoning=output.reasoning,
            cited_skill_ids=list(output.skill_ids),
            skill_count=len(view),
        )

    def learn_samples(self, session: Session, request: LearnSampleRequest) -> LearnSampleResponse:
        before = self._active_skills()
        samples = [Sample(s.question, s.context, s.ground_truth, dict(s.metadata)) for s in request.samples]
        # Answered on the fleet by the served label; what is learned goes to the head.
        handle = self.producer.enqueue_samples(samples, str(self.ref), epochs=request.epochs)
        queued = len(samples) * request.epochs
        done = failed = 0
        if request.wait:
            try:
                status = handle.wait(timeout=self.wait_seconds)
            except TimeoutError as exc:
                raise BackendError(
                    f"{exc}; the batch goes on in the workers (ACE_MCP_WAIT_SECONDS={self.wait_seconds:g})"
                ) from None
            done, failed = status.done, status.failed
        return LearnSampleResponse(
            session_id=session.id,
            queued=queued,
            processed=done,
            failed=failed,
            skill_count_before=before,
            skill_count_after=self._active_skills(),
            batch_id=handle.batch_id,
        )

    def learn_feedback(self, session: Session, request: LearnFeedbackRequest) -> LearnFeedbackResponse:
        last = session.last_ask
        assert last is not None  # the handlers check it
        before = self._active_skills()
        trace = {
            "question": last.question,
            "context": last.context,
            "reasoning": last.reasoning,
            "answer": last.answer,
            "skill_ids": last.skill_ids,
            "feedback": request.feedback,
            "ground_truth": request.ground_truth,
        }
        handle = self.producer.enqueue_traces([trace], self.skillbook_name)
        return LearnFeedbackResponse(
            session_id=session.id,
            learned=False,
            queued=True,
            skill_count_before=before,
            skill_count_after=before,
            batch_id=handle.batch_id,
        )

    def get_skillbook(self, session: Session, request: SkillbookGetRequest) -> SkillbookGetResponse:
        version, view = self._served()
        book = Skillbook.from_dict(view.to_dict())
        return SkillbookGetResponse(
            session_id=session.id,
            skillbook=str(self.ref),
            version=version,
            stats=book.stats(),
            skills=skill_items(book, request),
        )

    def save_skillbook(self, session: Session, path: Path) -> SkillbookSaveResponse:
        _, view = self._served()
        book = Skillbook.from_dict(view.to_dict())
        book.save_to_file(path)
        return SkillbookSaveResponse(session_id=session.id, path=str(path), saved_skill_count=len(book))

    def load_skillbook(self, session: Session, path: Path) -> SkillbookLoadResponse:
        if self.ref.label is not None:
            raise LabelWriteError(
                f"this server serves label {self.ref.label!r} of skillbook {self.ref.name!r} "
                f"(ACE_MCP_SKILLBOOK={self.ref}): a label is read, never written; move it with "
                f"'ace-workers skillbook label set {self.ref.name} {self.ref.label} VERSION'"
            )
        if not path.is_file():
            raise InvalidToolRequest(f"no skillbook file {path.name!r} in the skillbook directory")
        book = Skillbook.load_from_file(path)
        store = self.producer.runtime.store(self.skillbook_name)
        version = store.import_skillbook(
            book, replace=True, source={"command": "mcp ace.skillbook.load", "file": str(path)}
        )
        return SkillbookLoadResponse(
            session_id=session.id, path=str(path), skill_count=len(book), version=version
        )

    def fleet(self) -> FleetClient:
        return self._fleet

    def scoped_skillbook(self) -> str:
        """The skillbook every tool acts on: API keys must reach its owner."""
        return self.skillbook_name

    def tenant_map(self) -> TenantMap:
        return self.producer.runtime.tenants.current()

    def skillbook_names(self) -> list[str]:
        runtime = self.producer.runtime
        return sorted(list_skillbooks(runtime.redis, runtime.settings.queue_prefix))

    def api_keys(self) -> ApiKeys:
        runtime = self.producer.runtime
        return ApiKeys(runtime.redis, prefix=runtime.settings.queue_prefix)

    def close(self) -> None:
        self.producer.close()

"""What the MCP handlers delegate to: the in-process or the fleet back end."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

from ..core.skill import Skill
from ..core.skillbook import Skillbook
from ..distributed.tenancy.api_keys import ApiKeys
from ..distributed.tenancy.tenants import TenantMap
from ..operations import FleetClient
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
    SkillItem,
)
from .sessions import Session

__all__ = ["MCPBackend", "skill_items"]


class MCPBackend(Protocol):
    """Serves the tools once the handlers checked the request, the session and the paths."""

    name: str

    def new_session_state(self) -> Any:
        """The per-session state this back end keeps (None when it keeps none)."""
        ...

    def ask(self, session: Session, request: AskRequest) -> AskResponse:
        """Answer with the current skillbook."""
        ...

    def learn_samples(self, session: Session, request: LearnSampleRequest) -> LearnSampleResponse:
        """Learn from samples with ground truth."""
        ...

    def learn_feedback(self, session: Session, request: LearnFeedbackRequest) -> LearnFeedbackResponse:
        """Learn from the session's last ask and the feedback on it."""
        ...

    def get_skillbook(self, session: Session, request: SkillbookGetRequest) -> SkillbookGetResponse:
        """Statistics and skills."""
        ...

    def save_skillbook(self, session: Session, path: Path) -> SkillbookSaveResponse:
        """Write the skillbook to ``path`` (already confined to the directory)."""
        ...

    def load_skillbook(self, session: Session, path: Path) -> SkillbookLoadResponse:
        """Replace the skillbook with the file at ``path``."""
        ...

    def fleet(self) -> FleetClient | None:
        """The fleet the steering tools (review, labels, lifecycle) act on; None in process (none there)."""
        ...

    def scoped_skillbook(self) -> str | None:
        """The skillbook the tools act on, whose owner API keys are checked against; None in process."""
        ...

    def tenant_map(self) -> TenantMap:
        """Who owns which skillbook now (empty in process: no tenants there)."""
        ...

    def skillbook_names(self) -> list[str]:
        """Every skillbook of the fleet, sorted (none in process)."""
        ...

    def api_keys(self) -> ApiKeys | None:
        """The fleet's API keys, accepted as bearer tokens over HTTP; None in process (no Redis)."""
        ...

    def close(self) -> None:
        """Release connections."""
        ...


def skill_items(book: Skillbook, request: SkillbookGetRequest) -> list[SkillItem]:
    """The first ``request.limit`` skills of ``book`` as the tool returns them."""
    skills: list[Skill] = book.skills(include_invalid=request.include_invalid)[: request.limit]
    return [
        SkillItem(
            id=s.id,
            section=s.section,
            content=s.content,
            helpful=s.helpful,
            harmful=s.harmful,
            neutral=s.neutral,
            status=s.status,
        )
        for s in skills
    ]

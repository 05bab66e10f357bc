"""The MCP tools' requests and responses: their JSON schemas are what clients see.

Every request forbids unknown fields, so a misspelled argument is an error
naming it rather than a silently ignored value. Size limits that depend on the
server's configuration (question length, samples per call) are checked by the
handlers, which know the configuration; the bounds here are the hard ones.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "AskRequest",
    "AskResponse",
    "SampleItem",
    "LearnSampleRequest",
    "LearnSampleResponse",
    "LearnFeedbackRequest",
    "LearnFeedbackResponse",
    "SkillbookGetRequest",
    "SkillItem",
    "SkillbookGetResponse",
    "SkillbookSaveRequest",
    "SkillbookSaveResponse",
    "SkillbookLoadRequest",
    "SkillbookListRequest",
    "SkillbookListResponse",
    "SkillbookLoadResponse",
]

SESSION_ID = Field(
    min_length=1,
    max_length=128,
    pattern=r"^[A-Za-z0-9][A-Za-z0-9_.:-]*$",
    description="Names the conversation: ace.learn.feedback learns from this session's last ace.ask.",
)


class _Request(BaseModel):
    model_config = ConfigDict(extra="forbid")


class AskRequest(_Request):
    """Answer a question with the learned skillbook in the prompt (no learning)."""

    session_id: str = SESSION_ID
    question: str = Field(min_length=1, description="The question or task.")
    context: str = Field(default="", description="Extra context the agent should use.")


class AskResponse(BaseModel):
    """The agent's answer and the skills it cited."""

    session_id: str
    answer: str
    reasoning: str = ""
    cited_skill_ids: list[str] = Field(default_factory=list)
    skill_count: int = Field(ge=0, description="Active skills in the skillbook the answer used.")


class SampleItem(_Request):
    """One task to learn from: a question, and the answer it should get when known."""

    question: str = Field(min_length=1)
    context: str = ""
    ground_truth: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)


class LearnSampleRequest(_Request):
    """Answer the samples, compare with their ground truth and learn from the outcome."""

    session_id: str = SESSION_ID
    samples: list[SampleItem] = Field(min_length=1)
    epochs: int = Field(default=1, ge=1, le=20)
    wait: bool = Field(
        default=True,
        description="Fleet back end: wait for the workers to finish the batch (bounded by the "
        "server's timeout) instead of returning once it is queued.",
    )


class LearnSampleResponse(BaseModel):
    """What the learning run did (or, on the fleet, what was queued)."""

    session_id: str
    queued: int = Field(ge=0, description="Samples sent to learning (samples x epochs).")
    processed: int = Field(ge=0, description="Samples that finished learning.")
    failed: int = Field(ge=0)
    skill_count_before: int = Field(ge=0)
    skill_count_after: int = Field(ge=0)
    batch_id: str | None = Field(default=None, description="Fleet back end: the producer's batch.")


class LearnFeedbackRequest(_Request):
    """Learn from this session's last ace.ask and the user's feedback on its answer."""

    session_id: str = SESSION_ID
    feedback: str = Field(min_length=1, description="What the user said about the answer.")
    ground_truth: str | None = Field(default=None, description="The right answer, when known.")


class LearnFeedbackResponse(BaseModel):
    """Whether the feedback was learned (in process) or queued (fleet)."""

    session_id: str
    learned: bool = Field(description="In process: the learning run finished and was applied.")
    queued: bool = Field(default=False, description="Fleet: the trace was sent to the workers.")
    skill_count_before: int = Field(ge=0)
    skill_count_after: int = Field(ge=0)
    batch_id: str | None = None


class SkillbookGetRequest(_Request):
    """Read the skillbook's statistics and its skills."""

    session_id: str = SESSION_ID
    limit: int = Field(default=20, ge=1, le=500, description="Most skills to return.")
    include_invalid: bool = Field(default=False, description="Also return removed (invalid) skills.")


class SkillItem(BaseModel):
    """One skill as clients see it."""

    id: str
    section: str
    content: str
    helpful: int = 0
    harmful: int = 0
    neutral: int = 0
    status: str = "active"


class SkillbookGetResponse(BaseModel):
    """Statistics of the whole skillbook and its first ``limit`` skills."""

    session_id: str
    skillbook: str = Field(description="'session' in process, else the fleet skillbook's name.")
    version: int | None = Field(default=None, description="Fleet: the skillbook version read.")
    stats: dict[str, Any]
    skills: list[SkillItem]


class SkillbookSaveRequest(_Request):
    """Write the skillbook to a JSON file inside the server's skillbook directory."""

    session_id: str = SESSION_ID
    path: str = Field(
        min_length=1,
        description="A .json file name, relative to the skillbook directory (in a folder there already).",
    )
    overwrite: bool = Field(
        default=False, description="Replace the file if it exists (else an existing file is refused)."
    )


class SkillbookSaveResponse(BaseModel):
    """Where the skillbook was written and how many skills it holds."""

    session_id: str
    path: str
    saved_skill_count: int = Field(ge=0)


class SkillbookLoadRequest(_Request):
    """Replace the skillbook with one read from the server's skillbook directory."""

    session_id: str = SESSION_ID
    path: str = Field(min_length=1, description="A .json file name, relative to the skillbook directory.")


class SkillbookLoadResponse(BaseModel):
    """The file loaded and the skills it brought."""

    session_id: str
    path: str
    skill_count: int = Field(ge=0)
    version: int | None = Field(default=None, description="Fleet: the skillbook's new version.")


class SkillbookListRequest(_Request):
    """List the fleet's skillbooks this caller may use: its key's tenant's (every one for an operator)."""

    limit: int = Field(default=500, ge=1, le=5000, description="Most names to return.")


class SkillbookListResponse(BaseModel):
    """The skillbooks the caller's tenant owns, by name, and the one this server serves."""

    tenant: str = Field(description="The caller's tenant; '*' for an operator credential (every tenant).")
    role: str = Field(description="The caller's role: read, learn, review or admin.")
    served: str = Field(description="The skillbook this server's tools act on (ACE_MCP_SKILLBOOK).")
    skillbooks: list[str]

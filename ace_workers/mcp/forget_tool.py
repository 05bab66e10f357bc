"""The ``ace.forget`` tool: erase the traces a selector matches (role admin, ``confirm: true``).

It calls the operation ``ace-workers forget`` and the console call, as the tool's caller: within
the caller's tenant (every tenant for the operator's token), not only the served skillbook.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ..distributed.store.erasure_selector import Selector, parse_subject
from ..operations import FleetClient, Principal
from ..operations.forget import forget

__all__ = ["ForgetRequest", "ForgetResponse", "forget_traces"]


class ForgetRequest(BaseModel):
    """Erase every record of the traces one selector matches; list, archive or remove the skills learned
    only from them. Irreversible: ``confirm`` must be true (a ``dry_run`` needs no confirmation)."""

    model_config = ConfigDict(extra="forbid")

    subject: str | None = Field(
        default=None, max_length=2000, description="PATH=VALUE of the traces, e.g. metadata.user_id=alice."
    )
    trace_id: str | None = Field(default=None, max_length=500, description="The trace's trace_id (or id).")
    sample_id: str | None = Field(default=None, max_length=500, description="The sample's id.")
    batch_id: str | None = Field(default=None, max_length=200, description="Every sample of this batch.")
    derived: Literal["list", "archive", "remove"] = Field(
        default="list", description="What to do with the skills learned only from the matched traces."
    )
    dry_run: bool = Field(default=False, description="Only say what matches; erase nothing.")
    wait_seconds: float = Field(
        default=60.0, ge=0, le=600, description="How long to wait for matched samples still in flight."
    )
    confirm: bool = Field(default=False, description="Must be true to erase: nothing can bring it back.")

    @model_validator(mode="after")
    def _one_selector_and_a_confirmation(self) -> ForgetRequest:
        given = [name for name in ("subject", "trace_id", "sample_id", "batch_id") if getattr(self, name)]
        if len(given) != 1:
            raise ValueError("give exactly one of subject, trace_id, sample_id, batch_id")
        if not self.dry_run and not self.confirm:
            raise ValueError("confirm must be true to erase (or ask for a dry_run first)")
        return self

    def selector(self) -> Selector:
        """The selector the request names (InvalidSelectorError for one that names nothing)."""
        if self.subject:
            return parse_subject(self.subject)
        kind, value = next(
            (kind, value)
            for kind, value in (
                ("trace", self.trace_id),
                ("sample", self.sample_id),
                ("batch", self.batch_id),
            )
            if value
        )
        return Selector(kind, value)


class ForgetResponse(BaseModel):
    """What was erased (would be, dry run): samples matched, records per place, the derived skills."""

    erasure_id: str
    dry_run: bool
    samples: int
    counts: dict[str, int]
    derived: dict[str, list[str]] = Field(description="Per skillbook, the skills learned only from these.")
    derived_action: str
    derived_versions: dict[str, int] = Field(default_factory=dict)
    nothing_matched: bool


def forget_traces(
    fleet: FleetClient, principal: Principal, skillbook: str, request: ForgetRequest
) -> ForgetResponse:
    """Run ``forget`` as the caller (``skillbook``, the served one, does not narrow it: the tenant does)."""
    result = forget(
        fleet,
        principal,
        request.selector(),
        dry_run=request.dry_run,
        derived_action=request.derived,
        wait_seconds=request.wait_seconds,
    )
    # The response keeps its own fields of the result's JSON (pydantic ignores the rest).
    return ForgetResponse.model_validate({**result.to_dict(), "nothing_matched": result.nothing_matched})

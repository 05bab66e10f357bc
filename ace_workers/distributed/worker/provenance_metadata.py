"""What a worker adds to a sample's provenance: its batch, its place in the batch, recipe and trace id.

run_step (tasks.py) puts this under ``ctx.metadata[PROVENANCE_METADATA_KEY]``
before each step call; UpdateStep and TagStep read it (steps/provenance_source.py)
into the source of every operation they write, which the store records as
the skill's occurrence. It is set afresh for every step, so a payload from
elsewhere cannot claim another batch.
"""

from __future__ import annotations

from typing import Any

from ...core.context import ACEStepContext
from ...core.skill_provenance import PROVENANCE_METADATA_KEY
from .trace_context import carrier_of

__all__ = ["with_fleet_provenance"]


def _otel_trace_id(payload: object) -> str | None:
    """The trace id of the W3C traceparent the payload carries (tracing on), or None."""
    carrier = carrier_of(payload) or {}
    parts = carrier.get("traceparent", "").split("-")
    if len(parts) == 4 and len(parts[1]) == 32:
        return parts[1]
    return None


def with_fleet_provenance(
    ctx: ACEStepContext, payload: object, *, batch_id: str, sample_index: int, recipe: str
) -> ACEStepContext:
    """``ctx`` with the worker's part of the sample's provenance in its metadata."""
    fleet: dict[str, Any] = {"batch_id": batch_id, "sample_index": sample_index, "recipe": recipe}
    trace_id = _otel_trace_id(payload)
    if trace_id is not None:
        fleet["otel_trace_id"] = trace_id
    return ctx.replace(metadata={**ctx.metadata, PROVENANCE_METADATA_KEY: fleet})

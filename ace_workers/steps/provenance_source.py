"""Where a sample's lessons came from: the source UpdateStep and TagStep stamp on what they write.

What the step context knows (sample id, epoch, indices, the trace's own id,
the Reflector's key insight) is read here; what only a fleet worker knows
(batch id, sample index in the batch, recipe, the OpenTelemetry trace id) is
put in ``ctx.metadata[PROVENANCE_METADATA_KEY]`` by the worker's run_step
(distributed/worker/tasks.py) and read here. The skillbook turns the source
into an occurrence (core/skill_provenance.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..core.context import ACEStepContext
from ..core.skill_provenance import INSIGHT_CHARS, PROVENANCE_METADATA_KEY

__all__ = ["FLEET_KEYS", "REFLECTOR", "SKILL_MANAGER", "sample_source"]

# The actors of learning writes; the same names as distributed/store/actors.py (steps sit below it).
SKILL_MANAGER = "skill_manager"
REFLECTOR = "reflector"
# The keys run_step puts under ctx.metadata[PROVENANCE_METADATA_KEY].
FLEET_KEYS = ("batch_id", "sample_index", "recipe", "otel_trace_id")
# Keys of a trace dict that name it, in order of preference (the producer's own id).
_TRACE_ID_KEYS = ("trace_id", "id")


def _trace_id(trace: object) -> str | None:
    if not isinstance(trace, Mapping):
        return None
    for key in _TRACE_ID_KEYS:
        value = trace.get(key)
        if isinstance(value, str | int) and not isinstance(value, bool) and str(value).strip():
            return str(value).strip()
    return None


def sample_source(ctx: ACEStepContext, actor: str) -> dict[str, Any]:
    """Where a write made for the sample of ``ctx`` comes from, with ``actor`` as who decided it."""
    source: dict[str, Any] = {"actor": actor}
    sample_id = getattr(ctx.sample, "id", None)
    if sample_id is not None:
        source["sample_id"] = sample_id
    source["epoch"] = ctx.epoch
    source["step_index"] = ctx.step_index
    source["global_sample_index"] = ctx.global_sample_index
    fleet = ctx.metadata.get(PROVENANCE_METADATA_KEY)
    if isinstance(fleet, Mapping):
        source.update({key: fleet[key] for key in FLEET_KEYS if fleet.get(key) is not None})
    trace_id = _trace_id(ctx.trace)
    if trace_id is not None:
        source["trace_id"] = trace_id
    insight = getattr(ctx.reflection, "key_insight", "")
    if isinstance(insight, str) and insight.strip():
        source["insight"] = insight.strip()[:INSIGHT_CHARS]
    return source

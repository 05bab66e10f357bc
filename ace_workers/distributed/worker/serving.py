"""Which labelled version serves a sample: chosen by the producer, read by the worker's agent step.

Learning always writes the head; serving can read a label. A producer given
``support@prod`` (or ACE_SERVE_LABEL) and a canary share (``canary=0.1``, or
ACE_CANARY_SHARE) picks one label per sample and writes it into the sample's
payload metadata under :data:`SERVE_LABEL` (absent: the head). The pick is a
hash of the batch id and the sample's index, so a redelivered or re-sent
sample, and every epoch of it, is served by the same label.

On the fleet the step that runs the agent (a step class with ``serves_skillbook
= True``: AgentStep and the integrations' execute steps) is handed the
label's version instead of the head's, and records what served it in the
metadata: :data:`SERVED_VERSION` and :data:`SERVED_LABEL` (None for the head).
Those two keys travel with the sample to its result record (``BatchHandle.
results()``: ``ctx.metadata``), into its trace (EvaluateStep copies them, so the
Reflector sees them), to the live A/B counters (store/outcomes.py) and onto the
step's tracing span (``ace.served.version``, ``ace.served.label``). A message is
untrusted: a label in it that is not a label name fails the sample, naming it,
and never names another key.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import redis

from ...core.context import ACEStepContext
from ...observability.spans import ATTR_SERVED_LABEL, ATTR_SERVED_VERSION, set_span_attributes
from ...steps.evaluate import OUTCOME, SERVED_LABEL, SERVED_VERSION
from ..store.errors import InvalidLabelError
from ..store.keys import SkillbookKeys
from ..store.label_names import HEAD, parse_share, validate_label
from ..store.outcomes import FAILURE, SUCCESS, record_outcome
from ..store.store import RedisSkillbookStore
from .errors import PayloadError

__all__ = [
    "CANARY",
    "SERVED_LABEL",
    "SERVED_VERSION",
    "SERVE_LABEL",
    "ServingPlan",
    "canary_draw",
    "count_served",
    "mark_served",
    "parse_share",
    "requested_label",
    "serve",
    "served_by",
]

SERVE_LABEL = "serve_label"  # payload metadata: the label a sample is to be served by (producer)
CANARY = "canary"  # the label a canary share is served by


@dataclass(frozen=True)
class ServingPlan:
    """How a batch's samples are served: ``label`` (None: the head), and a share sent to ``canary``."""

    label: str | None = None
    canary_share: float = 0.0

    def __post_init__(self) -> None:
        if self.label is not None:
            validate_label(self.label)
        share = self.canary_share
        if isinstance(share, bool) or not isinstance(share, (int, float)) or not 0.0 <= share <= 1.0:
            raise ValueError(f"a canary share is a fraction from 0 to 1 (0.1 for 10%), got {share!r}")

    @property
    def serves_label(self) -> bool:
        """True when some sample is served by a label rather than the head."""
        return self.label is not None or self.canary_share > 0

    def labels(self) -> list[str]:
        """The labels this plan may serve (each must exist before a batch is sent)."""
        named = [self.label] if self.label is not None else []
        return [*named, CANARY] if self.canary_share > 0 and CANARY not in named else named

    def label_for(self, batch_id: str, sample_index: int) -> str | None:
        """The label sample ``sample_index`` of batch ``batch_id`` is served by (None: the head)."""
        if self.canary_share > 0 and canary_draw(batch_id, sample_index) < self.canary_share:
            return CANARY
        return self.label


def canary_draw(batch_id: str, sample_index: int) -> float:
    """A number in [0, 1) fixed by the batch id and the sample index: the same on every delivery."""
    digest = hashlib.sha256(f"{batch_id}:{sample_index}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def requested_label(metadata: Mapping[str, Any]) -> str | None:
    """The label a sample's metadata asks to be served by (None: the head); PayloadError if not a label."""
    label = metadata.get(SERVE_LABEL)
    if label is None:
        return None
    try:
        return validate_label(label)
    except InvalidLabelError as exc:
        raise PayloadError(f"metadata[{SERVE_LABEL!r}]: {exc}", field="metadata") from None


def serve(store: RedisSkillbookStore, ctx: ACEStepContext, head_version: int) -> ACEStepContext:
    """``ctx`` with the skillbook its sample is served by, and that version and label in its metadata.

    The head (no label asked) keeps the context's view, at ``head_version``. Raises
    PayloadError for a label that is not a label name, UnknownLabelError for one the
    skillbook does not have (naming those it has).
    """
    label = requested_label(ctx.metadata)
    if label is None:
        version, view = head_version, ctx.skillbook
    else:
        version, view = store.snapshot_of(label)
    return ctx.replace(
        skillbook=view, metadata={**ctx.metadata, SERVED_VERSION: version, SERVED_LABEL: label}
    )


def served_by(metadata: Mapping[str, Any]) -> tuple[int, str | None] | None:
    """The version and label that served a sample, from its metadata; None if no step served it.

    Metadata comes from a message: anything but a version and a label name (or None) is
    treated as not served, so a crafted one never names a counter of its own.
    """
    version, label = metadata.get(SERVED_VERSION), metadata.get(SERVED_LABEL)
    if isinstance(version, bool) or not isinstance(version, int):
        return None
    if label is None:
        return version, None
    try:
        return version, validate_label(label)
    except InvalidLabelError:
        return None


def mark_served(metadata: Mapping[str, Any]) -> None:
    """Put the served version and label on the running step's span (no-op without tracing)."""
    served = served_by(metadata)
    if served is not None:
        version, label = served
        set_span_attributes({ATTR_SERVED_VERSION: version, ATTR_SERVED_LABEL: label or HEAD})


def count_served(client: redis.Redis, keys: SkillbookKeys, metadata: Mapping[str, Any]) -> None:
    """Count a finished sample for the label that served it, with its verdict (store/outcomes.py).

    Called once per sample, when its result is first recorded; a sample no step served
    (a recorded trace) is not counted.
    """
    served = served_by(metadata)
    if served is None:
        return
    outcome = metadata.get(OUTCOME)
    record_outcome(client, keys, served[1], outcome if outcome in (SUCCESS, FAILURE) else None)

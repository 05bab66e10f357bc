"""The ACE pipeline steps, one class per module, and ``learning_tail`` to compose the standard tail.

Steps are stateless: what a call does depends only on the constructor's
arguments and the incoming :class:`~ace_workers.core.ACEStepContext`. Steps
that write the skillbook (or files made from it) get the real Skillbook in
their constructor and declare ``writes_skillbook = True``; the rest read the
context's read-only SkillbookView. Steps that run the agent declare
``serves_skillbook = True``: on the fleet their view is the version of the
sample's label (``support@prod``), while learning writes the head.
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Iterable, Mapping
from typing import Any

from pipeline import StepProtocol

from ..core.context import ACEStepContext
from ..core.writable import WritableSkillbook
from ..dedup.manager import DeduplicationManager
from ..errors import UnknownOptionError
from ..protocols import DeduplicationManagerLike, ReflectorLike, SkillManagerLike
from ..protocols.deduplication import DeduplicationConfig
from ._checks import MissingFieldError, check_interval
from .agent import AgentStep
from .apply import ApplyStep
from .checkpoint import CheckpointStep
from .deduplicate import DeduplicateStep
from .evaluate import EvaluateStep
from .export_markdown import ExportSkillbookMarkdownStep
from .load_traces import LoadTracesStep
from .observability import ObservabilityStep
from .opik import OpikStep
from .persist import PersistStep
from .reflect import ReflectStep
from .tag import TagStep
from .update import UpdateStep

__all__ = [
    # execute head
    "AgentStep",
    "EvaluateStep",
    "LoadTracesStep",
    # learning tail
    "ReflectStep",
    "TagStep",
    "UpdateStep",
    "ApplyStep",
    "DeduplicateStep",
    "CheckpointStep",
    "learning_tail",
    "check_tail_options",
    "tail_option_names",
    # output and observation
    "PersistStep",
    "ExportSkillbookMarkdownStep",
    "ObservabilityStep",
    "OpikStep",
    # errors
    "MissingFieldError",
]


def learning_tail(
    reflector: ReflectorLike,
    skill_manager: SkillManagerLike,
    skillbook: WritableSkillbook,
    *,
    dedup_manager: DeduplicationManagerLike | None = None,
    dedup_config: DeduplicationConfig | None = None,
    dedup_interval: int = 10,
    checkpoint_dir: str | os.PathLike[str] | None = None,
    checkpoint_interval: int = 10,
) -> list[StepProtocol[ACEStepContext]]:
    """The standard ACE learning steps: Reflect, Tag, Update, Apply, then Deduplicate and Checkpoint if asked.

    Use it after your own execute step(s), which must provide ``trace``. The
    deduplicate and checkpoint steps are added only when deduplication
    (``dedup_manager``, or ``dedup_config`` to build one) or ``checkpoint_dir``
    is given; both intervals are checked either way. A manager built from
    ``dedup_config`` decides similar pairs with the SkillManager's LLM.

    Raises:
        ValueError: both ``dedup_manager`` and ``dedup_config`` are given.
        EmbeddingUnavailableError: ``dedup_config``'s embedding provider cannot work here.
    """
    check_interval(dedup_interval, "dedup_interval")
    check_interval(checkpoint_interval, "checkpoint_interval")
    if dedup_config is not None:
        if dedup_manager is not None:
            raise ValueError("learning_tail: give dedup_manager or dedup_config, not both")
        dedup_manager = DeduplicationManager(dedup_config, llm=getattr(skill_manager, "llm", None))
    steps: list[StepProtocol[ACEStepContext]] = [
        ReflectStep(reflector),
        TagStep(skillbook),
        UpdateStep(skill_manager),
        ApplyStep(skillbook),
    ]
    if dedup_manager is not None:
        steps.append(DeduplicateStep(dedup_manager, skillbook, interval=dedup_interval))
    if checkpoint_dir is not None:
        steps.append(CheckpointStep(checkpoint_dir, skillbook, interval=checkpoint_interval))
    return steps


def tail_option_names() -> list[str]:
    """The options :func:`learning_tail` takes (its keyword-only parameters)."""
    parameters = inspect.signature(learning_tail).parameters.values()
    return [p.name for p in parameters if p.kind is inspect.Parameter.KEYWORD_ONLY]


def check_tail_options(options: Mapping[str, Any], where: str, also: Iterable[str] = ()) -> None:
    """Refuse, naming them, ``options`` that neither :func:`learning_tail` nor ``also`` takes.

    Runners pass their extra keyword arguments on to ``learning_tail``; checking them
    when the runner is built turns a typo (or an option only another runner takes,
    such as ``opik``) into an error at construction instead of at the first run.

    Raises:
        UnknownOptionError: some option is not taken.
    """
    accepted = tail_option_names() + list(also)
    unknown = sorted(name for name in options if name not in accepted)
    if unknown:
        raise UnknownOptionError(where, unknown, accepted)

"""The ACE data model: skills, the skillbook, delta updates, role outputs, samples, context."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy import lazy_exports

if TYPE_CHECKING:
    from .consolidation import (
        CONSOLIDATION_TYPES,
        ConsolidationBatch,
        ConsolidationOp,
        ConsolidationReport,
        DeleteOp,
        KeepOp,
        MergeOp,
        UpdateOp,
    )
    from .context import ACESample, ACEStepContext, SkillbookView
    from .environments import EnvironmentResult, Sample, SimpleEnvironment, TaskEnvironment
    from .files import write_text_atomically
    from .outputs import AgentOutput, ExtractedLearning, ReflectorOutput, SkillManagerOutput, SkillTag
    from .prompt_budget import DEFAULT_PROMPT_BUDGET, PromptBudget, RelevanceScorer, lexical_relevance
    from .skill import SimilarityDecision, Skill
    from .skill_ids import CITATION_PATTERN, extract_cited_skill_ids, format_skill_id, section_prefix
    from .skill_lookup import PendingOperation, SkillLookup
    from .skillbook import ApplyReport, Skillbook
    from .toon import encode_table
    from .updates import OPERATION_TYPES, UpdateBatch, UpdateOperation
    from .writable import WritableSkillbook

__all__ = [
    # skills and the skillbook
    "Skill",
    "SimilarityDecision",
    "Skillbook",
    "ApplyReport",
    "SkillbookView",
    "WritableSkillbook",
    # delta updates
    "UpdateOperation",
    "UpdateBatch",
    "OPERATION_TYPES",
    # consolidation (deduplication) operations
    "MergeOp",
    "DeleteOp",
    "KeepOp",
    "UpdateOp",
    "ConsolidationOp",
    "ConsolidationBatch",
    "ConsolidationReport",
    "CONSOLIDATION_TYPES",
    # prompt budget
    "PromptBudget",
    "DEFAULT_PROMPT_BUDGET",
    "RelevanceScorer",
    "lexical_relevance",
    # the SkillManager's lookup of existing skills
    "SkillLookup",
    "PendingOperation",
    # role outputs
    "AgentOutput",
    "ReflectorOutput",
    "SkillTag",
    "ExtractedLearning",
    "SkillManagerOutput",
    # samples and environments
    "Sample",
    "TaskEnvironment",
    "SimpleEnvironment",
    "EnvironmentResult",
    # pipeline context
    "ACEStepContext",
    "ACESample",
    # helpers
    "CITATION_PATTERN",
    "extract_cited_skill_ids",
    "format_skill_id",
    "section_prefix",
    "encode_table",
    "write_text_atomically",
]

# PEP 562: each name is imported from its module on first use (see ace_workers/lazy.py).
_SOURCES = (
    ".consolidation",
    ".context",
    ".environments",
    ".files",
    ".outputs",
    ".prompt_budget",
    ".skill",
    ".skill_ids",
    ".skill_lookup",
    ".skillbook",
    ".toon",
    ".updates",
    ".writable",
)
__getattr__ = lazy_exports(__name__, __all__, _SOURCES)

"""The ACE data model: skills, the skillbook, delta updates, role outputs, samples, context."""

from .context import ACESample, ACEStepContext, SkillbookView
from .environments import EnvironmentResult, Sample, SimpleEnvironment, TaskEnvironment
from .files import write_text_atomically
from .outputs import AgentOutput, ExtractedLearning, ReflectorOutput, SkillManagerOutput, SkillTag
from .skill import SimilarityDecision, Skill
from .skill_ids import CITATION_PATTERN, extract_cited_skill_ids, format_skill_id, section_prefix
from .skillbook import ApplyReport, Skillbook
from .toon import encode_table
from .updates import OPERATION_TYPES, UpdateBatch, UpdateOperation

__all__ = [
    # skills and the skillbook
    "Skill",
    "SimilarityDecision",
    "Skillbook",
    "ApplyReport",
    "SkillbookView",
    # delta updates
    "UpdateOperation",
    "UpdateBatch",
    "OPERATION_TYPES",
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

"""ace-workers: Agentic Context Engineering as distributed Celery workers on Redis.

An agent answers with a skillbook of learned strategies in its prompt; a
Reflector analyses each execution trace; a SkillManager turns the reflection
into delta operations that deterministic code applies. Importing this package
is cheap: every name is imported from its module on first use (:mod:`.lazy`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .extras import PROJECT_VERSION
from .lazy import lazy_exports

if TYPE_CHECKING:
    from pipeline import Branch, MergeStrategy, Pipeline, SampleResult, StepProtocol

    from .core import (
        DEFAULT_PROMPT_BUDGET,
        ACESample,
        ACEStepContext,
        AgentOutput,
        ApplyReport,
        ConsolidationBatch,
        ConsolidationOp,
        ConsolidationReport,
        DeleteOp,
        EnvironmentResult,
        ExtractedLearning,
        KeepOp,
        MergeOp,
        PromptBudget,
        ReflectorOutput,
        RelevanceScorer,
        Sample,
        SimilarityDecision,
        SimpleEnvironment,
        Skill,
        Skillbook,
        SkillbookView,
        SkillManagerOutput,
        SkillTag,
        TaskEnvironment,
        UpdateBatch,
        UpdateOp,
        UpdateOperation,
        extract_cited_skill_ids,
    )
    from .dedup import (
        DeduplicationConfig,
        DeduplicationManager,
        EmbeddingCache,
        EmbeddingRelevance,
        InMemoryEmbeddingCache,
        LiteLLMEmbedder,
        PruneRule,
        SentenceTransformerEmbedder,
        SimilarityDetector,
        SimilarPair,
    )
    from .errors import (
        AceError,
        EmbeddingUnavailableError,
        EmptySessionError,
        ExternalAgentError,
        InvalidConsolidationError,
        InvalidUpdateError,
        LearningFailed,
        LLMError,
        LLMRequestRejected,
        MissingExecutableError,
        MissingExtraError,
        MissingFieldError,
        ModelUnavailableError,
        RecursiveReflectorError,
        RetriesExhausted,
        SkillbookError,
        SkillbookFormatError,
        TracingSetupError,
        UnknownSkillError,
        UnknownTagError,
    )
    from .integrations import (
        BrowserExecuteStep,
        BrowserResult,
        BrowserToTrace,
        ClaudeCodeExecuteStep,
        ClaudeCodeLLMClient,
        ClaudeCodeResult,
        ClaudeCodeToTrace,
        LangChainExecuteStep,
        LangChainResult,
        LangChainToTrace,
        OpenClawToTraceStep,
        read_claude_code_transcript,
        wrap_skillbook_context,
    )
    from .observability import register_opik_litellm_callback
    from .protocols import AgentLike, DeduplicationManagerLike, LLMClientLike, ReflectorLike, SkillManagerLike
    from .providers import (
        InstructorClient,
        LangChainLiteLLMClient,
        LiteLLMClient,
        LiteLLMConfig,
        LLMResponse,
        wrap_with_instructor,
    )
    from .roles import (
        AGENT_PROMPT,
        REFLECTOR_PROMPT,
        SKILL_MANAGER_PROMPT,
        SKILLBOOK_USAGE_INSTRUCTIONS,
        Agent,
        Reflector,
        SkillManager,
        wrap_skillbook_for_external_agent,
    )
    from .rr import RRConfig, RROpikStep, RRStep
    from .runners import ACE, ACELiteLLM, ACERunner, BrowserUse, ClaudeCode, LangChain, TraceAnalyser
    from .steps import (
        AgentStep,
        ApplyStep,
        CheckpointStep,
        DeduplicateStep,
        EvaluateStep,
        ExportSkillbookMarkdownStep,
        LoadTracesStep,
        ObservabilityStep,
        OpikStep,
        PersistStep,
        ReflectStep,
        TagStep,
        UpdateStep,
        learning_tail,
    )

__version__ = PROJECT_VERSION

__all__ = [
    # package metadata
    "__version__",
    # pipeline engine
    "Pipeline",
    "Branch",
    "MergeStrategy",
    "StepProtocol",
    "SampleResult",
    # data model
    "Skill",
    "Skillbook",
    "SkillbookView",
    "SimilarityDecision",
    "UpdateOperation",
    "UpdateBatch",
    "ApplyReport",
    "AgentOutput",
    "ReflectorOutput",
    "SkillTag",
    "ExtractedLearning",
    "SkillManagerOutput",
    "Sample",
    "TaskEnvironment",
    "SimpleEnvironment",
    "EnvironmentResult",
    "ACEStepContext",
    "ACESample",
    "extract_cited_skill_ids",
    # deduplication and consolidation
    "DeduplicationManager",
    "DeduplicationConfig",
    "PruneRule",
    "SimilarityDetector",
    "SimilarPair",
    "SentenceTransformerEmbedder",
    "LiteLLMEmbedder",
    "EmbeddingCache",
    "InMemoryEmbeddingCache",
    "MergeOp",
    "DeleteOp",
    "KeepOp",
    "UpdateOp",
    "ConsolidationOp",
    "ConsolidationBatch",
    "ConsolidationReport",
    # prompt budget
    "PromptBudget",
    "DEFAULT_PROMPT_BUDGET",
    "RelevanceScorer",
    "EmbeddingRelevance",
    # protocols
    "AgentLike",
    "ReflectorLike",
    "SkillManagerLike",
    "DeduplicationManagerLike",
    "LLMClientLike",
    # roles and prompts
    "Agent",
    "Reflector",
    "SkillManager",
    "AGENT_PROMPT",
    "REFLECTOR_PROMPT",
    "SKILL_MANAGER_PROMPT",
    "SKILLBOOK_USAGE_INSTRUCTIONS",
    "wrap_skillbook_for_external_agent",
    # LLM providers
    "LLMResponse",
    "LiteLLMClient",
    "LiteLLMConfig",
    "InstructorClient",
    "wrap_with_instructor",
    "LangChainLiteLLMClient",
    # steps
    "AgentStep",
    "EvaluateStep",
    "ReflectStep",
    "TagStep",
    "UpdateStep",
    "ApplyStep",
    "DeduplicateStep",
    "CheckpointStep",
    "ObservabilityStep",
    "LoadTracesStep",
    "ExportSkillbookMarkdownStep",
    "PersistStep",
    "OpikStep",
    "learning_tail",
    # runners
    "ACERunner",
    "TraceAnalyser",
    "ACE",
    "ACELiteLLM",
    # integrations: agents that learn where they run (LangChain, browser-use, Claude Code, OpenClaw)
    "LangChain",
    "LangChainExecuteStep",
    "LangChainResult",
    "LangChainToTrace",
    "BrowserUse",
    "BrowserExecuteStep",
    "BrowserResult",
    "BrowserToTrace",
    "ClaudeCode",
    "ClaudeCodeExecuteStep",
    "ClaudeCodeResult",
    "ClaudeCodeToTrace",
    "ClaudeCodeLLMClient",
    "OpenClawToTraceStep",
    "read_claude_code_transcript",
    "wrap_skillbook_context",
    # the Recursive Reflector (a drop-in Reflector whose code runs in a process sandbox)
    "RRStep",
    "RRConfig",
    "RROpikStep",
    # tracing (opik is imported on first use only)
    "register_opik_litellm_callback",
    # errors
    "AceError",
    "SkillbookError",
    "UnknownSkillError",
    "UnknownTagError",
    "InvalidUpdateError",
    "InvalidConsolidationError",
    "SkillbookFormatError",
    "MissingFieldError",
    "EmbeddingUnavailableError",
    "LLMError",
    "LLMRequestRejected",
    "ModelUnavailableError",
    "LearningFailed",
    "ExternalAgentError",
    "MissingExecutableError",
    "EmptySessionError",
    "RecursiveReflectorError",
    "MissingExtraError",
    "TracingSetupError",
    "RetriesExhausted",
]

# Where names are looked up, in order: the light modules before the LLM stack.
_SOURCES = (
    ".errors",
    "pipeline",
    ".core",
    ".protocols",
    ".dedup",
    ".providers",
    ".roles",
    ".steps",
    ".runners",
    ".rr",
    ".integrations",
    ".observability",
)
__getattr__ = lazy_exports(__name__, __all__, _SOURCES)

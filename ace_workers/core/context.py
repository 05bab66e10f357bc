"""The ACE step context, and the read-only skillbook view it carries."""

from __future__ import annotations

from collections.abc import Callable, Container, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from pipeline import StepContext

from .outputs import AgentOutput, ReflectorOutput, SkillManagerOutput
from .prompt_budget import PromptBudget, RelevanceScorer
from .skill import SimilarityDecision, Skill
from .skillbook import Skillbook

__all__ = ["ACESample", "ACEStepContext", "SkillbookView"]


@runtime_checkable
class ACESample(Protocol):
    """What steps read from a sample; :class:`Sample` satisfies it."""

    @property
    def question(self) -> str:
        """The task."""
        ...

    @property
    def context(self) -> str:
        """Extra context for the task."""
        ...

    @property
    def ground_truth(self) -> str | None:
        """The expected answer, if known."""
        ...

    @property
    def metadata(self) -> dict[str, Any]:
        """Free-form data about the sample."""
        ...


class SkillbookView:
    """Read-only projection of a Skillbook, safe to put on a frozen context.

    It has no write methods at all: steps that write get the real Skillbook
    through their constructor. The Redis store hands out its shared, cached
    snapshots as views too, so nobody can change a snapshot others read.
    """

    __slots__ = ("_book", "_read")

    def __init__(self, skillbook: Skillbook) -> None:
        self._book: Skillbook | None = skillbook
        self._read: Callable[[], Skillbook] | None = None

    @classmethod
    def on_first_use(cls, read: Callable[[], SkillbookView]) -> SkillbookView:
        """A view of the skillbook ``read``'s view shows, read when this view is first used, not before.

        For a step that may never look at it (a worker's skillbook writer writes through the store):
        the read, and bringing a cached snapshot up to date, is spent only if the step reads.
        """
        view = cls.__new__(cls)
        view._book, view._read = None, lambda: read()._sb
        return view

    @property
    def _sb(self) -> Skillbook:
        if self._book is None:
            assert self._read is not None  # one of the two is always set
            self._book, self._read = self._read(), None
        return self._book

    def as_prompt(
        self,
        budget: PromptBudget | None = None,
        query: str = "",
        scorer: RelevanceScorer | None = None,
    ) -> str:
        """The skills as a TOON table for prompts, cut to ``budget`` by relevance to ``query``."""
        return self._sb.as_prompt(budget, query, scorer)

    def most_relevant(
        self,
        query: str,
        k: int,
        scorer: RelevanceScorer | None = None,
        *,
        exclude: Container[str] = frozenset(),
    ) -> list[Skill]:
        """Copies of up to ``k`` active skills most relevant to ``query``, best first, none of ``exclude``."""
        return self._sb.most_relevant(query, k, scorer, exclude=exclude)

    def as_markdown(self) -> str:
        """The skills as markdown."""
        return self._sb.as_markdown()

    def get_skill(self, skill_id: str) -> Skill | None:
        """A copy of one skill, or None."""
        return self._sb.get_skill(skill_id)

    def skills(self, include_invalid: bool = False) -> list[Skill]:
        """Copies of the skills."""
        return self._sb.skills(include_invalid=include_invalid)

    def skill_columns(self, names: Sequence[str]) -> dict[str, list[Any]]:
        """One list per named scalar field, over every skill in insertion order, without copying skills."""
        return self._sb.skill_columns(names)

    def sections(self) -> list[str]:
        """Sections holding active skills."""
        return self._sb.sections()

    def stats(self) -> dict[str, Any]:
        """Skill and tag counts."""
        return self._sb.stats()

    def to_dict(self) -> dict[str, Any]:
        """The file format (a copy): ``Skillbook.from_dict(view.to_dict())`` gives one to change."""
        return self._sb.to_dict()

    def dumps(self) -> str:
        """The skillbook as a JSON string."""
        return self._sb.dumps()

    def keep_pairs(self) -> list[tuple[str, str]]:
        """Every pair judged distinct (KEEP)."""
        return self._sb.keep_pairs()

    def get_similarity_decision(self, id_a: str, id_b: str) -> SimilarityDecision | None:
        """The decision recorded for the pair, if any."""
        return self._sb.get_similarity_decision(id_a, id_b)

    def has_keep_decision(self, id_a: str, id_b: str) -> bool:
        """True if the pair was judged distinct (KEEP)."""
        return self._sb.has_keep_decision(id_a, id_b)

    def __contains__(self, skill_id: object) -> bool:
        return skill_id in self._sb

    def __len__(self) -> int:
        return len(self._sb)

    def __iter__(self) -> Iterator[Skill]:
        return iter(self._sb.skills())

    def __repr__(self) -> str:
        if self._book is None:
            return "SkillbookView(not read yet)"  # a repr (a log line) is no reason to read it
        return f"SkillbookView({len(self)} skills)"


@dataclass(frozen=True)
class ACEStepContext(StepContext):
    """Immutable per-sample state of the ACE pipeline.

    ``skillbook`` is a read-only view; ``trace`` is the raw execution record
    (any object) the Reflector learns from.
    """

    sample: ACESample | None = None
    skillbook: SkillbookView | None = None
    trace: object | None = None
    agent_output: AgentOutput | None = None
    reflection: ReflectorOutput | None = None
    skill_manager_output: SkillManagerOutput | None = None
    epoch: int = 1
    total_epochs: int = 1
    step_index: int = 0
    total_steps: int | None = None
    global_sample_index: int = 0

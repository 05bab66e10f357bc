"""DeduplicateStep consolidates the skillbook, in a step and in a whole in-process run."""

from __future__ import annotations

from collections.abc import Iterable

from ace_workers.core import (
    ACEStepContext,
    ConsolidationBatch,
    ConsolidationOp,
    ConsolidationReport,
    DeleteOp,
    Skillbook,
    SkillbookView,
)
from ace_workers.dedup import (
    DeduplicationConfig,
    DeduplicationManager,
    SentenceTransformerEmbedder,
    SimilarityDetector,
)
from ace_workers.roles import Reflector, SkillManager
from ace_workers.runners import TraceAnalyser
from ace_workers.sim import TOPICS, SimulatedLLM, make_tasks
from ace_workers.steps import DeduplicateStep
from tests.support.embedders import keyword_embedder

RULE = "For zorb questions, reverse the digits of the input."
RESTATED = "On zorb questions, reverse the digits of the input number."  # MiniLM: 0.96 with RULE
OTHER = "For zorb questions, add one to the input."  # MiniLM: 0.75 with RULE


class RoutedSkillbook(Skillbook):
    """A skillbook that records consolidation writes, as a store-backed one routes them."""

    def __init__(self) -> None:
        super().__init__()
        self.routed: list[ConsolidationBatch] = []

    def apply_consolidation(
        self, operations: ConsolidationBatch | Iterable[ConsolidationOp]
    ) -> ConsolidationReport:
        assert isinstance(operations, ConsolidationBatch)
        self.routed.append(operations)
        return super().apply_consolidation(operations)


class StaleOnceManager:
    """Plans a delete of a skill that a concurrent writer removes before the first apply."""

    def __init__(self, book: Skillbook, victim: str, survivor: str) -> None:
        self.book, self.victim, self.survivor = book, victim, survivor
        self.plans = 0

    def get_similarity_report(self, skillbook: Skillbook) -> str | None:
        return None

    def plan(self, skillbook: Skillbook) -> ConsolidationBatch:
        self.plans += 1
        if self.plans == 1:
            batch = ConsolidationBatch(operations=[DeleteOp(skill_id=self.victim)])
            self.book.remove_skill(self.victim)  # another step got there first
            return batch
        return ConsolidationBatch(operations=[DeleteOp(skill_id=self.survivor)])


def _ctx(book: Skillbook, index: int) -> ACEStepContext:
    return ACEStepContext(skillbook=SkillbookView(book), global_sample_index=index)


def test_the_step_applies_the_plan_through_the_skillbooks_consolidation_path() -> None:
    book = RoutedSkillbook()
    first = book.add_skill("s", "alpha one").id
    second = book.add_skill("s", "alpha two").id
    manager = DeduplicationManager(detector=SimilarityDetector(keyword_embedder(["alpha"])))
    step = DeduplicateStep(manager, book, interval=2)
    step(_ctx(book, 1))
    assert len(book) == 2
    assert book.routed == []
    step(_ctx(book, 2))
    assert len(book.routed) == 1
    assert book.routed[0].named_ids() == {first, second}
    assert [s.id for s in book.skills()] == [first]


def test_a_stale_plan_is_planned_again() -> None:
    book = Skillbook()
    victim = book.add_skill("s", "one").id
    survivor = book.add_skill("s", "two").id
    manager = StaleOnceManager(book, victim, survivor)
    DeduplicateStep(manager, book, interval=1)(_ctx(book, 1))
    assert manager.plans == 2
    assert len(book) == 0


def test_a_trace_analyser_run_with_the_simulated_llm_merges_restated_rules(
    minilm: SentenceTransformerEmbedder,
) -> None:
    book = Skillbook()
    rule = book.add_skill("zorb", RULE).id
    restated = book.add_skill("zorb", RESTATED).id
    other = book.add_skill("zorb", OTHER).id
    book.tag_skill(restated, "helpful", 2)
    book.tag_skill(restated, "harmful", 1)
    llm = SimulatedLLM()
    manager = DeduplicationManager(
        DeduplicationConfig(), llm=llm, detector=SimilarityDetector(minilm, model_name="all-MiniLM-L6-v2")
    )
    tasks = make_tasks(4, topics=[t for t in TOPICS if t.name == "zorb"])
    traces = [
        {
            "question": t.question,
            "answer": "no idea",
            "ground_truth": t.ground_truth,
            "feedback": "Incorrect.",
        }
        for t in tasks
    ]
    analyser = TraceAnalyser.from_roles(
        reflector=Reflector(llm),
        skill_manager=SkillManager(llm),
        skillbook=book,
        dedup_manager=manager,
        dedup_interval=2,
    )
    results = analyser.run(traces)
    assert all(r.ok for r in results), [r.error for r in results]

    assert llm.call_count("ConsolidationResponse") == 1  # sample 2 merged; sample 4 found nothing
    assert [s.id for s in book.skills()] == [rule, other]
    kept, gone = book.get_skill(rule), book.get_skill(restated)
    assert kept is not None
    assert gone is not None
    assert gone.status == "invalid"
    # Each sample's restated lesson tags the rule helpful (4), and the merge added the restated votes.
    assert (kept.helpful, kept.harmful) == (4 + 2, 1)
    assert (gone.helpful, gone.harmful) == (2, 1)  # left as they were, for the record

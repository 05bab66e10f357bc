"""The prompt budget: big skillbooks are cut to the relevant skills, small ones are untouched."""

from __future__ import annotations

import pytest

from ace_workers.core import DEFAULT_PROMPT_BUDGET, PromptBudget, Skillbook, SkillbookView
from ace_workers.core.outputs import ExtractedLearning, ReflectorOutput
from ace_workers.dedup import EmbeddingRelevance, SentenceTransformerEmbedder, SimilarityDetector
from ace_workers.roles import Agent, SkillManager
from ace_workers.sim import SimulatedLLM
from tests.support.embedders import CLUSTERS

NEEDLE = "For invoice questions, add the VAT of the country of delivery before totalling."
QUESTION = "What is the invoice total for a delivery to Portugal including VAT?"


def _big_book(count: int) -> Skillbook:
    """``count`` filler skills in 20 sections, with one needle in the middle."""
    book = Skillbook()
    for n in range(count):
        if n == count // 2:
            book.add_skill("billing", NEEDLE)
        book.add_skill(
            f"topic{n % 20}", f"When handling case {n} of kind {n % 37}, check the assumptions step {n % 11}."
        )
    return book


def _skill_lines(table: str) -> list[str]:
    return [line for line in table.split("\n") if line.startswith("  ")]


def test_a_2000_skill_agent_prompt_stays_within_the_default_budget_and_holds_the_relevant_skill() -> None:
    book = _big_book(2000)
    needle_id = next(s.id for s in book.skills() if s.content == NEEDLE)
    llm = SimulatedLLM()
    agent = Agent(llm)
    full = book.as_prompt()
    prompt = agent.build_prompt(QUESTION, "", SkillbookView(book))
    table = prompt.split("## Skillbook\n", 1)[1].split("\n\n## Skillbook usage", 1)[0]
    assert len(full) > 150_000
    assert DEFAULT_PROMPT_BUDGET.max_chars is not None
    assert len(table) <= DEFAULT_PROMPT_BUDGET.max_chars
    assert DEFAULT_PROMPT_BUDGET.max_skills is not None
    assert len(_skill_lines(table)) <= DEFAULT_PROMPT_BUDGET.max_skills
    assert f"  {needle_id}\t" in table
    assert "more skills not shown" in table
    assert len(prompt) < len(full) / 3


def test_below_the_budget_the_prompt_is_byte_identical(clustered_book: Skillbook) -> None:
    plain = clustered_book.as_prompt()
    assert clustered_book.as_prompt(DEFAULT_PROMPT_BUDGET, "anything") == plain
    assert SkillbookView(clustered_book).as_prompt(PromptBudget(max_skills=12), "x") == plain
    assert clustered_book.as_prompt(PromptBudget(max_chars=len(plain)), "x") == plain
    llm = SimulatedLLM()
    assert Agent(llm).build_prompt("q", "c", clustered_book) == Agent(llm, prompt_budget=None).build_prompt(
        "q", "c", clustered_book
    )


def test_max_chars_is_a_hard_limit_and_rows_keep_skillbook_order() -> None:
    book = _big_book(300)
    budget = PromptBudget(max_skills=None, max_chars=5_000)
    table = book.as_prompt(budget, QUESTION)
    assert len(table) <= 5_000
    assert f"{NEEDLE}" in table
    order = [s.id for s in book.skills()]
    shown = [line.split("\t")[0].strip() for line in _skill_lines(table)]
    assert shown == sorted(shown, key=order.index)
    assert table.startswith(f"skills[{len(shown)}\t]")


def test_ties_go_to_more_helpful_than_harmful_skills() -> None:
    book = Skillbook()
    ids = [book.add_skill("s", f"Plain advice number {n}.").id for n in range(6)]
    book.tag_skill(ids[4], "helpful", 3)
    book.tag_skill(ids[1], "helpful", 2)
    book.tag_skill(ids[0], "harmful", 2)
    table = book.as_prompt(PromptBudget(max_skills=2), "unrelated question")
    assert [line.split("\t")[0].strip() for line in _skill_lines(table)] == [ids[1], ids[4]]


def test_the_skill_manager_sees_skills_relevant_to_the_reflection() -> None:
    book = _big_book(500)
    reflection = ReflectorOutput(
        reasoning="Wrong total.",
        key_insight="Add VAT of the delivery country to invoice totals.",
        extracted_learnings=[ExtractedLearning(learning="Invoice totals include VAT.")],
    )
    manager = SkillManager(SimulatedLLM(), prompt_budget=PromptBudget(max_skills=10))
    prompt = manager.build_prompt(reflection, book)
    assert NEEDLE in prompt
    assert "(491 more skills not shown" in prompt


def test_embedding_relevance_picks_the_paraphrase_of_the_question(
    minilm: SentenceTransformerEmbedder,
) -> None:
    book = Skillbook()
    for section, contents in CLUSTERS.items():
        book.add_skill(section, contents[0])
    relevance = EmbeddingRelevance(SimilarityDetector(minilm))
    table = book.as_prompt(
        PromptBudget(max_skills=1), "How many decimals should my final figure have?", relevance
    )
    assert CLUSTERS["rounding"][0] in table
    assert len(_skill_lines(table)) == 1
    agent = Agent(SimulatedLLM(), prompt_budget=PromptBudget(max_skills=1), relevance=relevance)
    prompt = agent.build_prompt("Should I flip the text back to front? Input: abc", "", book)
    assert CLUSTERS["reverse"][0] in prompt
    assert CLUSTERS["rounding"][0] not in prompt


@pytest.mark.parametrize("bad", [{"max_skills": 0}, {"max_chars": -1}, {"max_skills": True}])
def test_bad_budgets_fail_when_declared(bad: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        PromptBudget(**bad)  # type: ignore[arg-type]

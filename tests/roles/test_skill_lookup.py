"""The SkillManager looks before it adds: similar skills and pending proposals in its prompt, or tools."""

from __future__ import annotations

import pytest

from ace_workers.core import Skillbook, SkillbookView, SkillManagerOutput, UpdateBatch
from ace_workers.core.skill_lookup import PendingOperation, SkillLookup
from ace_workers.providers.call_gate import GatedClient
from ace_workers.roles import SkillManager
from ace_workers.roles.lookup_section import related_pending
from ace_workers.roles.skill_manager_tools import SkillManagerTurn, ToolCall
from ace_workers.sim import SimulatedLLM
from ace_workers.sim.parsing import parse_sections, parse_skill_table, parse_tables
from tests.support.gates import RecordingGate
from tests.support.llms import ScriptedStructuredLLM
from tests.support.lookup import (
    ZORB_QUESTION_CONTEXT,
    ZORB_RULE,
    ZORB_RULE_REWORDED,
    crowded_skillbook,
    zorb_reflection,
)


@pytest.fixture(scope="module")
def crowded() -> tuple[SkillbookView, str]:
    """10,000 skills, the zorb rule among them but outside the SkillManager's budgeted slice."""
    book, rule_id = crowded_skillbook(10_000)
    return SkillbookView(book), rule_id


def decide(lookup: SkillLookup, view: SkillbookView, **options: object) -> tuple[SkillManagerOutput, str]:
    """The simulated SkillManager's decision on the zorb reflection, and the (first) prompt it was sent."""
    llm = SimulatedLLM()
    manager = SkillManager(llm, lookup=lookup, **options)  # type: ignore[arg-type]
    output = manager.update_skills(zorb_reflection(), view, ZORB_QUESTION_CONTEXT)
    return output, manager.build_prompt(zorb_reflection(), view, ZORB_QUESTION_CONTEXT)


def shown_ids(table: str) -> set[str]:
    return {row.id for row in parse_skill_table(table)}


def operations(output: SkillManagerOutput) -> list[tuple[str, str | None]]:
    return [(op.type, op.skill_id) for op in output.update.operations]


def test_at_10000_skills_the_rule_outside_the_slice_is_looked_up_and_tagged(
    crowded: tuple[SkillbookView, str],
) -> None:
    view, rule_id = crowded
    output, prompt = decide(SkillLookup(), view)
    sections = parse_sections(prompt)
    assert rule_id not in shown_ids(sections["Skillbook"])
    assert rule_id in [row.id for row in parse_skill_table(sections["Similar skills"])]
    assert operations(output) == [("TAG", rule_id)]


def test_with_the_lookup_off_the_same_reflection_adds_the_rule_again(
    crowded: tuple[SkillbookView, str],
) -> None:
    view, rule_id = crowded
    output, prompt = decide(SkillLookup(mode="off"), view)
    assert "## Similar skills" not in prompt
    assert rule_id not in prompt
    assert [(op.type, op.content) for op in output.update.operations] == [("ADD", ZORB_RULE)]


@pytest.mark.parametrize("k", [1, 3])
def test_the_lookup_shows_at_most_k_skills_none_of_them_in_the_slice(
    crowded: tuple[SkillbookView, str], k: int
) -> None:
    view, rule_id = crowded
    _, prompt = decide(SkillLookup(k=k), view)
    sections = parse_sections(prompt)
    similar = [row.id for row in parse_skill_table(sections["Similar skills"])]
    assert similar[0] == rule_id  # the closest first
    assert len(similar) <= k
    assert not set(similar) & set(shown_ids(sections["Skillbook"]))


def test_a_skillbook_shown_whole_gets_no_lookup_section(skillbook: Skillbook) -> None:
    _, prompt = decide(SkillLookup(), SkillbookView(skillbook))
    assert "## Similar skills" not in prompt


def test_a_lookup_finds_only_skills_sharing_words_with_a_learning(crowded: tuple[SkillbookView, str]) -> None:
    view, _ = crowded
    assert view.most_relevant("entirely unrelated vocabulary", 8) == []


def test_a_pending_proposal_stating_the_learning_is_shown_and_repeated_verbatim() -> None:
    pending = [
        PendingOperation("p-other", "ADD", "blip", content="Sort the letters of blip words alphabetically."),
        PendingOperation("p-zorb", "ADD", "zorb-rules", content=ZORB_RULE_REWORDED),
    ]
    output, prompt = decide(SkillLookup(), SkillbookView(Skillbook()), pending=lambda: pending)
    rows = parse_tables(parse_sections(prompt)["Pending proposals"])["proposals"]
    assert [row["proposal"] for row in rows] == ["p-zorb"]  # the unrelated one is left out
    (op,) = output.update.operations
    assert (op.type, op.section, op.content) == ("ADD", "zorb-rules", ZORB_RULE_REWORDED)


def test_pending_proposals_are_not_read_with_the_lookup_off() -> None:
    def pending() -> list[PendingOperation]:
        raise AssertionError("read with the lookup off")

    output, _ = decide(SkillLookup(mode="off"), SkillbookView(Skillbook()), pending=pending)
    assert [op.type for op in output.update.operations] == ["ADD"]


def test_the_tool_using_manager_searches_then_tags_the_rule(crowded: tuple[SkillbookView, str]) -> None:
    view, rule_id = crowded
    llm = SimulatedLLM()
    output = SkillManager(llm, lookup=SkillLookup(mode="tools")).update_skills(
        zorb_reflection(), view, ZORB_QUESTION_CONTEXT
    )
    assert operations(output) == [("TAG", rule_id)]
    assert llm.call_count(SkillManagerTurn) == 2  # one search, one answer
    assert output.raw["tool_calls"] == 1
    assert "search_skills(query=" in (llm.last_prompt(SkillManagerTurn) or "")


def search(query: str) -> ToolCall:
    return ToolCall(name="search_skills", query=query, k=50)


def test_tool_calls_stop_at_the_bound_and_every_turn_passes_the_gate(
    crowded: tuple[SkillbookView, str],
) -> None:
    view, _ = crowded
    greedy = SkillManagerTurn(tool_calls=[search("zorb digits"), search("reverse"), search("input")])
    llm = ScriptedStructuredLLM(SkillManagerTurn, greedy, greedy, greedy, greedy)
    gate = RecordingGate()
    manager = SkillManager(
        GatedClient(llm, gate, "scripted"), lookup=SkillLookup(mode="tools", k=2, max_calls=4)
    )
    output = manager.update_skills(zorb_reflection(), view, ZORB_QUESTION_CONTEXT)
    # 3 calls, then 1 (2 refused), then a turn asking again with none left: it ends, adding nothing.
    assert len(llm.prompts) == 3
    assert output.raw["tool_calls"] == 4
    assert output.update.operations == []
    assert "Tool calls left: 0" in llm.prompts[-1]
    assert llm.prompts[-1].count("refused: all 4 tool calls are spent") == 2
    # k is capped at ACE_SKILL_LOOKUP_K: no search shows more than 2 skills.
    assert all(len(parse_skill_table(t)) <= 2 for t in llm.prompts[-1].split("### ")[1:])
    assert [event for event, _ in gate.events] == ["before", "after"] * 3


def test_the_tool_turns_usage_is_summed_on_the_output(crowded: tuple[SkillbookView, str]) -> None:
    view, _ = crowded
    llm = SimulatedLLM()
    output = SkillManager(llm, lookup=SkillLookup(mode="tools")).update_skills(
        zorb_reflection(), view, ZORB_QUESTION_CONTEXT
    )
    assert output.raw["usage"]["prompt_tokens"] == llm.usage["prompt_tokens"]
    assert output.raw["turns"] == llm.usage["calls"] == 2


def test_an_answer_without_tools_is_one_turn() -> None:
    answer = SkillManagerTurn(update=UpdateBatch(reasoning="nothing to do"))
    llm = ScriptedStructuredLLM(SkillManagerTurn, answer)
    output = SkillManager(llm, lookup=SkillLookup(mode="tools")).update_skills(
        zorb_reflection(), SkillbookView(Skillbook())
    )
    assert (len(llm.prompts), output.update.reasoning) == (1, "nothing to do")


@pytest.mark.parametrize(
    ("options", "problem"),
    [
        ({"mode": "sometimes"}, "mode must be one of"),
        ({"k": 0}, "k must be"),
        ({"max_calls": True}, "max_calls"),
    ],
)
def test_a_bad_lookup_setting_is_refused_naming_it(options: dict[str, object], problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        SkillLookup(**options)  # type: ignore[arg-type]


def test_related_pending_ranks_rare_shared_words_above_words_every_lesson_says() -> None:
    def op(content: str) -> PendingOperation:
        return PendingOperation(proposal_id=content[:4], type="ADD", section="s", content=content)

    common = [
        op(f"For {name} questions, transform the input as the input says.")
        for name in ("flux", "mirp", "brix")
    ]
    same_rule = op("Zorb puzzles want the digits backwards.")
    unrelated = op("Check gauge 3 before turning crank 7.")
    found = related_pending([*common, same_rule, unrelated], [ZORB_RULE], k=2)
    assert found[0] == same_rule  # "zorb" and "digits" are rare among them; "questions" and "input" are not
    assert unrelated not in related_pending([*common, same_rule, unrelated], [ZORB_RULE], k=10)

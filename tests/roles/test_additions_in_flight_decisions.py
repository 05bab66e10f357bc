"""A SkillManager deciding beside others announces its ADDs, and decides again when an earlier one adds alike.

On a real Redis (the announcements' stream) with the simulated LLM: the second of two
decisions on one lesson, worded otherwise, restates the first one's ADD verbatim, which
the single writer then adds once.
"""

from __future__ import annotations

import pytest
import redis

from ace_workers.core import Skillbook, SkillbookView, SkillManagerOutput
from ace_workers.core.outputs import ExtractedLearning, ReflectorOutput
from ace_workers.core.skill_lookup import PendingOperation, SkillLookup
from ace_workers.distributed import RedisSkillbookStore
from ace_workers.distributed.store.additions_in_flight import RedisAdditionsInFlight
from ace_workers.roles import SkillManager
from ace_workers.sim import SimulatedLLM
from tests.support.lookup import ZORB_QUESTION_CONTEXT, ZORB_RULE, ZORB_RULE_REWORDED

UNRELATED = "Check gauge 3 before turning crank 7."


def reflection(learning: str) -> ReflectorOutput:
    """The simulated Reflector's lesson, stating ``learning``."""
    return ReflectorOutput(
        reasoning="The answer was wrong.",
        key_insight=learning,
        extracted_learnings=[ExtractedLearning(learning=learning, evidence="input 1234")],
    )


def adds(output: SkillManagerOutput) -> list[tuple[str, str]]:
    return [(op.section, op.content) for op in output.update.operations if op.type == "ADD"]


def stream_contents(redis_client: redis.Redis, store: RedisSkillbookStore) -> list[bytes]:
    return [fields[b"adds"] for _, fields in redis_client.xrange(store.keys.additions_in_flight)]  # type: ignore[index, union-attr]


def manager(redis_client: redis.Redis, store: RedisSkillbookStore, mode: str = "similar") -> SkillManager:
    in_flight = RedisAdditionsInFlight(redis_client, store.keys)
    return SkillManager(SimulatedLLM(), lookup=SkillLookup(mode=mode), in_flight=in_flight)


def test_a_later_decision_on_the_same_lesson_restates_the_earlier_add_verbatim(
    redis_client: redis.Redis, store: RedisSkillbookStore
) -> None:
    empty = SkillbookView(Skillbook())
    first = manager(redis_client, store).update_skills(reflection(ZORB_RULE), empty, ZORB_QUESTION_CONTEXT)
    assert adds(first) == [("zorb", ZORB_RULE)]

    later = manager(redis_client, store)
    llm = later.llm
    assert isinstance(llm, SimulatedLLM)
    second = later.update_skills(reflection(ZORB_RULE_REWORDED), empty, ZORB_QUESTION_CONTEXT)
    assert adds(second) == [("zorb", ZORB_RULE)]  # the first's words, not its own
    assert llm.call_count(SkillManagerOutput) == 2
    again = llm.last_prompt(SkillManagerOutput) or ""
    assert "## Being added" in again and ZORB_RULE in again
    # The second's own ADD was withdrawn and nothing new announced: later slots see the first alone.
    assert len(stream_contents(redis_client, store)) == 1
    assert ZORB_RULE.encode() in stream_contents(redis_client, store)[0]
    # Both calls' tokens are the decision's.
    spent = llm.usage
    assert spent["calls"] == 2
    assert second.raw["usage"]["prompt_tokens"] == spent["prompt_tokens"]
    assert second.raw["usage"]["completion_tokens"] == spent["completion_tokens"]


def test_adds_in_flight_to_other_sections_or_sharing_no_word_cost_no_second_call(
    redis_client: redis.Redis, store: RedisSkillbookStore
) -> None:
    empty = SkillbookView(Skillbook())
    manager(redis_client, store).update_skills(reflection(UNRELATED), empty)
    # Another task type's lesson: it shares "questions" and "input", but not the section.
    manager(redis_client, store).update_skills(
        reflection("For brix questions, add 17 to the input number."), empty
    )
    later = manager(redis_client, store)
    output = later.update_skills(reflection(ZORB_RULE), empty, ZORB_QUESTION_CONTEXT)
    assert adds(output) == [("zorb", ZORB_RULE)]
    assert later.llm.call_count(SkillManagerOutput) == 1  # type: ignore[attr-defined]
    assert len(stream_contents(redis_client, store)) == 3  # all announced


@pytest.mark.parametrize(
    ("mode", "added", "announced"),
    [("tools", ZORB_RULE, True), ("off", ZORB_RULE_REWORDED, False)],
    ids=["tools decide again too", "off announces nothing and adds as worded"],
)
def test_the_tool_using_manager_decides_again_and_with_the_lookup_off_nothing_is_announced(
    redis_client: redis.Redis, store: RedisSkillbookStore, mode: str, added: str, announced: bool
) -> None:
    empty = SkillbookView(Skillbook())
    manager(redis_client, store, mode).update_skills(reflection(ZORB_RULE), empty, ZORB_QUESTION_CONTEXT)
    second = manager(redis_client, store, mode).update_skills(
        reflection(ZORB_RULE_REWORDED), empty, ZORB_QUESTION_CONTEXT
    )
    assert adds(second) == [("zorb", added)]
    assert bool(redis_client.exists(store.keys.additions_in_flight)) is announced


def test_a_second_decision_that_adds_the_same_keeps_its_announcement_and_place(
    redis_client: redis.Redis, store: RedisSkillbookStore
) -> None:
    empty = SkillbookView(Skillbook())
    # Another lesson of the same task type (section zorb): like enough to ask again, not the same rule.
    manager(redis_client, store).update_skills(reflection("For zorb questions, never pad the input."), empty)
    later = manager(redis_client, store)
    output = later.update_skills(reflection(ZORB_RULE), empty, ZORB_QUESTION_CONTEXT)
    assert adds(output) == [("zorb", ZORB_RULE)]
    assert later.llm.call_count(SkillManagerOutput) == 2  # type: ignore[attr-defined]
    entries = redis_client.xrange(store.keys.additions_in_flight)
    assert len(entries) == 2
    assert ZORB_RULE.encode() in entries[1][1][b"adds"]  # type: ignore[index]


def test_an_add_an_earlier_one_states_word_for_word_costs_no_second_call(
    redis_client: redis.Redis, store: RedisSkillbookStore
) -> None:
    empty = SkillbookView(Skillbook())
    manager(redis_client, store).update_skills(reflection(ZORB_RULE), empty, ZORB_QUESTION_CONTEXT)
    later = manager(redis_client, store)
    # The same lesson in other case and spacing: the writer's duplicate check will add it once.
    output = later.update_skills(reflection("  for ZORB questions, reverse the digits of the input"), empty)
    assert [section for section, _ in adds(output)] == ["zorb"]  # the same section: no other reason to skip
    assert later.llm.call_count(SkillManagerOutput) == 1  # type: ignore[attr-defined]


def test_a_decision_asked_again_repeats_the_oldest_announcement_even_one_stating_its_own_words(
    redis_client: redis.Redis, store: RedisSkillbookStore
) -> None:
    empty = SkillbookView(Skillbook())
    in_flight = RedisAdditionsInFlight(redis_client, store.keys)
    # The oldest announcement (ZORB_RULE), then one in other words whose decision has not yet
    # withdrawn it, as happens while its second call runs.
    manager(redis_client, store).update_skills(reflection(ZORB_RULE), empty, ZORB_QUESTION_CONTEXT)
    in_flight.announce(
        [PendingOperation(proposal_id="", type="ADD", section="zorb", content=ZORB_RULE_REWORDED)]
    )
    later = manager(redis_client, store)
    output = later.update_skills(reflection(ZORB_RULE), empty, ZORB_QUESTION_CONTEXT)
    # Asked again for the other wording, it repeats the oldest (its own words), not the one in between.
    assert later.llm.call_count(SkillManagerOutput) == 2  # type: ignore[attr-defined]
    assert adds(output) == [("zorb", ZORB_RULE)]

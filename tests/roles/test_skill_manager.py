"""SkillManager: reflection JSON, skillbook, progress and stats in its prompt."""

from __future__ import annotations

import json
import re

import pytest

from ace_workers.core import (
    ReflectorOutput,
    Skillbook,
    SkillbookView,
    SkillManagerOutput,
    SkillTag,
    UpdateBatch,
    UpdateOperation,
)
from ace_workers.errors import RetriesExhausted
from ace_workers.protocols import SkillManagerLike
from ace_workers.roles import SkillManager
from ace_workers.sim import SimulatedLLM
from tests.support.llms import RecordingLLM

REPLY = SkillManagerOutput(
    update=UpdateBatch(
        reasoning="One new lesson.",
        operations=[UpdateOperation(type="ADD", section="math", content="Convert units first.")],
    )
)
REFLECTION = ReflectorOutput(
    reasoning="Mixed units.",
    key_insight="Convert units first.",
    skill_tags=[SkillTag(id="math-00002", tag="harmful")],
    raw={"usage": {"prompt_tokens": 10}},
)


def make_llm() -> RecordingLLM:
    return RecordingLLM({SkillManagerOutput: REPLY})


def test_skill_manager_satisfies_the_protocol() -> None:
    assert isinstance(SkillManager(make_llm()), SkillManagerLike)


def test_prompt_holds_progress_stats_skillbook_and_reflection(skillbook: Skillbook) -> None:
    llm = make_llm()
    output = SkillManager(llm).update_skills(
        REFLECTION, SkillbookView(skillbook), question_context="Unit sums", progress="Epoch 2/3, sample 4/30"
    )
    assert output == REPLY
    prompt = llm.last_prompt
    assert "## Progress\nEpoch 2/3, sample 4/30\n" in prompt
    assert "## Question context\nUnit sums\n" in prompt
    assert f"## Skillbook\n{skillbook.as_prompt()}\n" in prompt
    stats = re.search(r"^## Skillbook stats\n(.+)$", prompt, re.MULTILINE)
    assert stats is not None
    assert json.loads(stats.group(1)) == skillbook.stats()
    reflection = re.search(r"^## Reflection\n(.+)$", prompt, re.MULTILINE)
    assert reflection is not None
    data = json.loads(reflection.group(1))
    assert data["key_insight"] == "Convert units first."
    assert "skill_tags" not in data  # TagStep applies them; the SkillManager must not count them again
    assert "raw" not in data  # provider metadata is no input


def test_progress_and_context_default_to_none(skillbook: Skillbook) -> None:
    llm = make_llm()
    SkillManager(llm).update_skills(REFLECTION, skillbook)
    assert "## Progress\n(none)\n" in llm.last_prompt
    assert "## Question context\n(none)\n" in llm.last_prompt


def test_max_retries_and_extra_kwargs_reach_the_client(skillbook: Skillbook) -> None:
    llm = make_llm()
    SkillManager(llm, max_retries=7).update_skills(REFLECTION, skillbook, seed=1)
    assert llm.last_kwargs == {"max_retries": 7, "seed": 1}
    assert llm.calls[-1][1] is SkillManagerOutput


def test_llm_errors_propagate(skillbook: Skillbook) -> None:
    with pytest.raises(RetriesExhausted) as info:
        SkillManager(SimulatedLLM(malformed_rate=1.0), max_retries=4).update_skills(REFLECTION, skillbook)
    assert info.value.attempts == 4

"""The tool-using SkillManager through the real litellm and instructor path, answered by ``mock_response``."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from ace_workers.core import Skillbook, SkillbookView
from ace_workers.core.skill_lookup import SkillLookup
from ace_workers.providers import LiteLLMClient
from ace_workers.roles import SkillManager
from ace_workers.roles.skill_manager_tools import SkillManagerTurn, ToolCall
from tests.support.gates import RecordingGate
from tests.support.llms import MOCK_USAGE, MODEL, ScriptedCompletion
from tests.support.lookup import ZORB_QUESTION_CONTEXT, ZORB_SKILL, zorb_reflection

Script = Callable[..., ScriptedCompletion]


def test_a_litellm_model_searches_then_tags_and_each_turn_is_metered(
    script: Script, monkeypatch: pytest.MonkeyPatch
) -> None:
    # With SSL_CERT_FILE set (as on this machine), a litellm HTTP client made inside a test hands
    # httpx a CA path, which httpx deprecates: a warning, an error under filterwarnings=error.
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    book = Skillbook()
    rule = book.add_skill("zorb", ZORB_SKILL)
    search = SkillManagerTurn(tool_calls=[ToolCall(name="search_skills", query="zorb digits", k=3)])
    answer = {
        "tool_calls": [],
        "update": {
            "reasoning": "restated",
            "operations": [{"type": "TAG", "skill_id": rule.id, "metadata": {"helpful": 1}}],
        },
    }
    scripted = script(search.model_dump_json(), SkillManagerTurn.model_validate(answer).model_dump_json())
    gate = RecordingGate()
    llm = LiteLLMClient(MODEL, api_key="sk-test", retry_wait_seconds=0.0, gate=gate)
    output = SkillManager(llm, lookup=SkillLookup(mode="tools")).update_skills(
        zorb_reflection(), SkillbookView(book), ZORB_QUESTION_CONTEXT
    )
    assert [(op.type, op.skill_id) for op in output.update.operations] == [("TAG", rule.id)]
    # The second turn's prompt holds what the search found.
    second_prompt = scripted.calls[1]["messages"][-1]["content"]
    assert "search_skills(query='zorb digits', k=3)" in second_prompt
    assert rule.id in second_prompt
    assert gate.events == [("before", MODEL), ("after", (MODEL, MOCK_USAGE))] * 2
    assert output.raw["usage"]["total_tokens"] == 2 * MOCK_USAGE["total_tokens"]

"""The spec's "With Recursive Reflector + Opik" example (001, Usage Examples), run as written.

The real litellm path answers: the Recursive Reflector's prompt with code that
calls FINAL (run in the real sandbox), every other prompt with the shared
scripted reply. No Opik server is reachable here, so the test sets the
operator's off switch, OPIK_DISABLED, which ``opik=True`` honours.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ace_workers.providers._lazy_imports import import_litellm
from tests.support.llms import SPEC_LESSON, SPEC_REPLY

REFLECTION = {
    "reasoning": "r",
    "key_insight": SPEC_LESSON,
    "extracted_learnings": [{"learning": SPEC_LESSON}],
}
FINAL_CODE = f"```python\nprint(question)\nFINAL({json.dumps(REFLECTION)})\n```"


class RRAwareLiteLLM:
    """The real ``litellm.completion``: code for the Recursive Reflector, SPEC_REPLY for the other roles."""

    def __init__(self, real: Any) -> None:
        self.real = real
        self.rr_prompts: list[str] = []

    def __call__(self, **kwargs: Any) -> Any:
        prompt = str(kwargs["messages"][-1].get("content", ""))
        if prompt.startswith("# Recursive reflector"):
            self.rr_prompts.append(prompt)
            return self.real(**kwargs, mock_response=FINAL_CODE)
        return self.real(**kwargs, mock_response=SPEC_REPLY)


def test_acelitellm_with_the_recursive_reflector_and_opik(
    monkeypatch: pytest.MonkeyPatch, workdir: Path
) -> None:
    litellm = import_litellm()
    scripted = RRAwareLiteLLM(litellm.completion)
    monkeypatch.setattr(litellm, "completion", scripted)
    monkeypatch.setenv("OPIK_DISABLED", "true")

    # With Recursive Reflector + Opik
    from ace_workers import ACELiteLLM, LiteLLMClient, RRConfig, RRStep

    llm = LiteLLMClient(model="gpt-4o-mini")
    rr = RRStep(llm, config=RRConfig(max_iterations=10))
    ace = ACELiteLLM(llm, reflector=rr, opik=True)

    from ace_workers import Sample, SimpleEnvironment

    results = ace.learn(
        [Sample(question="Capital of France?", ground_truth="Paris")], environment=SimpleEnvironment()
    )
    assert [result.error for result in results] == [None]
    assert [skill.content for skill in ace.skillbook.skills()] == [SPEC_LESSON]
    assert len(scripted.rr_prompts) == 1  # FINAL on the first turn
    reflection = results[0].output.reflection
    assert reflection is not None
    assert reflection.raw["rr_trace"]["iterations"][0]["stdout"] == "Capital of France?\n"

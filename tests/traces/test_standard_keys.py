"""Every trace converter gives the six standard keys of spec 001, empty where the run has nothing.

ReflectStep reads ``question``, ``reasoning``, ``answer``, ``skill_ids``, ``feedback`` and
``ground_truth`` from a converted trace; a converter states each, even as "", [] or None.
The runs are the integrations' own fixtures (recorded sessions, transcripts, browser-use
histories) and hand-built results of runs that did nothing at all.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ace_workers.core import ACEStepContext
from ace_workers.steps import LoadTracesStep
from ace_workers.traces import (
    BrowserResult,
    BrowserToTrace,
    ClaudeCodeResult,
    ClaudeCodeToTrace,
    LangChainResult,
    LangChainToTrace,
    OpenClawToTraceStep,
    read_claude_code_transcript,
)
from tests.support.browser_agents import failed_zorb_run

INTEGRATIONS = Path(__file__).resolve().parents[1] / "integrations"
OPENCLAW_SESSIONS = INTEGRATIONS / "openclaw" / "sessions"
CLAUDE_TRANSCRIPT = INTEGRATIONS / "claude_code" / "transcripts" / "fix-tests.jsonl"
# Spec 001: "The standardised trace dict keys match what ReflectStep expects".
STANDARD_KEYS = ("question", "reasoning", "answer", "skill_ids", "feedback", "ground_truth")


def converted(step: Any, trace: Any) -> dict[str, Any]:
    out = step(ACEStepContext(trace=trace)).trace
    assert isinstance(out, dict)
    return out


def loaded(path: Path) -> Any:
    return LoadTracesStep()(ACEStepContext(sample=path)).trace


CASES: dict[str, Callable[[], dict[str, Any]]] = {
    "openclaw zorb session": lambda: converted(
        OpenClawToTraceStep(), loaded(OPENCLAW_SESSIONS / "zorb.jsonl")
    ),
    "openclaw flux session": lambda: converted(
        OpenClawToTraceStep(), loaded(OPENCLAW_SESSIONS / "flux.jsonl")
    ),
    "openclaw session of one question": lambda: converted(
        OpenClawToTraceStep(), [{"type": "message", "message": {"role": "user", "content": "hello?"}}]
    ),
    "claude code transcript": lambda: read_claude_code_transcript(CLAUDE_TRANSCRIPT),
    "claude code transcript events": lambda: converted(ClaudeCodeToTrace(), loaded(CLAUDE_TRANSCRIPT)),
    "claude code run that printed nothing": lambda: converted(
        ClaudeCodeToTrace(),
        ClaudeCodeResult(task="fix it", success=False, output="", returncode=1, error="exit 1"),
    ),
    "browser-use history": lambda: converted(BrowserToTrace(), failed_zorb_run()),
    "browser-use run that raised before its first step": lambda: converted(
        BrowserToTrace(), BrowserResult(task="open it", success=False, output="", error="no browser")
    ),
    "langchain run": lambda: converted(
        LangChainToTrace(),
        LangChainResult(
            task="zorb of 9?",
            output="90",
            result_type="simple",
            success=True,
            events=[{"type": "llm", "text": "By [zorb-00001], 90"}],
        ),
    ),
    "langchain run that raised at once": lambda: converted(
        LangChainToTrace(),
        LangChainResult(task="", output="", result_type="error", success=False, error="boom"),
    ),
}


@pytest.mark.parametrize("case", CASES)
def test_every_converter_gives_the_six_standard_keys(case: str) -> None:
    trace = CASES[case]()
    missing = [key for key in STANDARD_KEYS if key not in trace]
    assert missing == [], f"{case}: no {missing}"
    assert all(isinstance(trace[key], str) for key in ("question", "reasoning", "answer"))
    assert isinstance(trace["skill_ids"], list)
    assert trace["feedback"] is None or isinstance(trace["feedback"], str)
    assert trace["ground_truth"] is None  # no run records the expected answer


@pytest.mark.parametrize(
    "case",
    [
        "openclaw session of one question",
        "claude code run that printed nothing",
        "langchain run that raised at once",
    ],
)
def test_a_run_without_steps_keeps_an_empty_reasoning_and_no_skill_ids(case: str) -> None:
    trace = CASES[case]()
    assert (trace["reasoning"], trace["skill_ids"]) == ("", [])


def test_the_skill_ids_are_the_skills_the_run_cited() -> None:
    assert CASES["langchain run"]()["skill_ids"] == ["zorb-00001"]

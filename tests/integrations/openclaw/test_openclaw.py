"""OpenClaw sessions: recorded JSONL files -> traces -> learning through LoadTracesStep and TraceAnalyser."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from ace_workers.core import ACEStepContext
from ace_workers.errors import EmptySessionError
from ace_workers.integrations import OpenClawToTraceStep, openclaw_events_to_trace
from ace_workers.roles import Reflector, SkillManager
from ace_workers.runners import ACERunner, TraceAnalyser
from ace_workers.sim import SimulatedLLM
from ace_workers.steps import LoadTracesStep, learning_tail

SESSIONS = Path(__file__).with_name("sessions")


def convert(path: Path) -> dict:  # type: ignore[type-arg]
    loaded = LoadTracesStep()(ACEStepContext(sample=path))
    return OpenClawToTraceStep()(loaded).trace  # type: ignore[no-any-return]


def test_a_session_becomes_a_trace_of_its_question_tool_calls_and_answer() -> None:
    trace = convert(SESSIONS / "zorb.jsonl")
    assert (trace["question"], trace["answer"], trace["tool_calls"]) == (
        "Solve the zorb puzzle. Input: 1234",
        "no idea",
        1,
    )
    assert (trace["session_id"], trace["model"]) == (
        "0b8e6a52-1c9d-4d7e-8f33-5a1e2c7d9b01",
        "claude-sonnet-4-5",
    )


def test_the_reasoning_keeps_thinking_calls_and_results_in_order() -> None:
    reasoning = convert(SESSIONS / "zorb.jsonl")["reasoning"]
    steps = [
        "thinking: Let me check",
        'tool call read: {"path": "notes/zorb.md"}',
        "read result (error): ENOENT",
    ]
    positions = [reasoning.index(step) for step in steps]
    assert positions == sorted(positions)


def test_a_failed_tool_call_is_listed_in_errors() -> None:
    assert convert(SESSIONS / "zorb.jsonl")["errors"] == [
        "read failed: ENOENT: no such file or directory, open 'notes/zorb.md'"
    ]


def test_an_errored_turn_is_an_error_and_the_compaction_summary_ends_the_feedback() -> None:
    trace = convert(SESSIONS / "flux.jsonl")
    assert trace["errors"] == ["the assistant turn ended with error: 529 overloaded_error"]
    assert trace["feedback"] == (
        "OpenClaw session: 1 user message, 2 assistant turns, 1 tool call; 1 error, the last: the "
        "assistant turn ended with error: 529 overloaded_error; its last assistant turn failed. "
        "Summary: The user asked a flux puzzle; the answer echoed the input."
    )


def test_the_feedback_summarises_the_session_its_turns_tool_calls_errors_and_outcome() -> None:
    # Spec 001: the OpenClaw converter puts "a session summary into feedback".
    assert convert(SESSIONS / "zorb.jsonl")["feedback"] == (
        "OpenClaw session: 1 user message, 2 assistant turns, 1 tool call; 1 error, the last: read "
        "failed: ENOENT: no such file or directory, open 'notes/zorb.md'; "
        "it ended with the assistant's answer."
    )


def test_a_session_that_stopped_on_a_tool_call_says_it_has_no_final_answer() -> None:
    events = [
        {"type": "message", "message": {"role": "user", "content": "list the files"}},
        {
            "type": "message",
            "message": {
                "role": "assistant",
                "content": [{"type": "toolCall", "id": "c1", "name": "exec", "arguments": {"command": "ls"}}],
                "stopReason": "toolUse",
            },
        },
    ]
    assert openclaw_events_to_trace(events)["feedback"] == (
        "OpenClaw session: 1 user message, 1 assistant turn, 1 tool call; "
        "it ended on a tool call, before a final answer."
    )


def test_unknown_events_and_roles_are_skipped_and_counted() -> None:
    trace = convert(SESSIONS / "flux.jsonl")
    assert trace["skipped_events"] == {"custom_message": 1, "message role bashExecution": 1}


def test_a_session_without_messages_is_a_clear_error_naming_the_file() -> None:
    with pytest.raises(
        EmptySessionError, match=r"empty\.jsonl: the session holds no user or assistant message"
    ):
        convert(SESSIONS / "empty.jsonl")


def test_a_huge_tool_output_is_cut_so_the_trace_stays_small() -> None:
    events = [
        {"type": "message", "message": {"role": "user", "content": "read the log"}},
        {
            "type": "message",
            "message": {"role": "toolResult", "toolName": "exec", "content": "z" * 2_000_000},
        },
    ]
    trace = openclaw_events_to_trace(events)
    assert len(json.dumps(trace)) < 10_000
    assert "characters cut from this output" in trace["reasoning"]


def test_trace_analyser_learns_the_rules_from_converted_sessions() -> None:
    llm = SimulatedLLM()
    traces = [convert(SESSIONS / name) for name in ("zorb.jsonl", "flux.jsonl")]
    analyser = TraceAnalyser.from_roles(reflector=Reflector(llm), skill_manager=SkillManager(llm))
    assert all(r.ok for r in analyser.run(traces))
    assert sorted(s.section for s in analyser.skillbook.skills()) == ["flux", "zorb"]


def test_a_pipeline_of_load_convert_and_learn_runs_over_session_files(tmp_path: Path) -> None:
    llm = SimulatedLLM()
    analyser = TraceAnalyser.from_roles(reflector=Reflector(llm), skill_manager=SkillManager(llm))
    from pipeline import Pipeline

    steps = [
        LoadTracesStep(),
        OpenClawToTraceStep(),
        *learning_tail(Reflector(llm), SkillManager(llm), analyser.skillbook),
    ]
    runner = ACERunner(Pipeline(steps), analyser.skillbook)
    shutil.copy(SESSIONS / "empty.jsonl", tmp_path / "empty.jsonl")
    results = runner.run([SESSIONS / "zorb.jsonl", tmp_path / "empty.jsonl"])
    assert [r.ok for r in results] == [True, False]
    assert [s.section for s in runner.skillbook.skills()] == ["zorb"]

"""Claude Code against a fake CLI: execute step, converter, LLM client, runner, transcripts."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
from pydantic import BaseModel

from ace_workers.core import Skillbook
from ace_workers.errors import EmptySessionError, ExternalAgentError, MissingExecutableError, RetriesExhausted
from ace_workers.integrations import (
    ClaudeCodeExecuteStep,
    ClaudeCodeLLMClient,
    ClaudeCodeResult,
    ClaudeCodeToTrace,
    read_claude_code_transcript,
    wrap_skillbook_context,
)
from ace_workers.roles import Reflector, SkillManager
from ace_workers.runners import ClaudeCode
from ace_workers.sim import SimulatedLLM, make_tasks
from tests.support.claude_code import FakeClaude
from tests.support.skillbooks import context, skillbook_with_rule

TRANSCRIPTS = Path(__file__).with_name("transcripts")


# -- the execute step ------------------------------------------------------------------------


def test_a_missing_claude_executable_fails_at_construction_naming_the_install_command(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(MissingExecutableError, match="npm install -g @anthropic-ai/claude-code"):
        ClaudeCodeExecuteStep()


def test_the_execute_step_sends_the_skillbook_before_the_task_on_stdin(fake_claude: FakeClaude) -> None:
    ClaudeCodeExecuteStep()(context("Solve the zorb puzzle. Input: 1234", skillbook_with_rule()))
    (run,) = fake_claude.runs()
    assert run["stdin"].index("reverse the digits") < run["stdin"].index("## Task\nSolve the zorb puzzle")


def test_the_execute_step_runs_print_mode_with_stream_json(fake_claude: FakeClaude) -> None:
    ClaudeCodeExecuteStep(model="sonnet")(context("task", Skillbook()))
    (run,) = fake_claude.runs()
    assert run["argv"] == ["-p", "--output-format", "stream-json", "--verbose", "--model", "sonnet"]


def test_an_empty_skillbook_sends_the_task_alone(fake_claude: FakeClaude) -> None:
    ClaudeCodeExecuteStep()(context("just the task", Skillbook()))
    assert fake_claude.runs()[0]["stdin"] == "just the task"


def test_the_execute_step_runs_in_the_working_dir(fake_claude: FakeClaude, tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    ClaudeCodeExecuteStep(project)(context("task", Skillbook()))
    assert fake_claude.runs()[0]["cwd"] == str(project)


def test_a_successful_run_gives_a_result_with_the_final_answer_cost_and_events(
    fake_claude: FakeClaude,
) -> None:
    result = ClaudeCodeExecuteStep()(context("task", Skillbook())).trace
    assert isinstance(result, ClaudeCodeResult)
    assert (result.success, result.output, result.returncode, result.error) == (True, "no idea", 0, None)
    assert (result.session_id, result.cost_usd, result.num_turns) == (
        "8f14e45f-ceea-467f-a0e6-d2b2c1b4a001",
        0.0123,
        2,
    )
    assert result.execution_trace[0]["type"] == "system"


def test_a_run_that_exits_non_zero_records_the_error_with_stderr(fake_claude: FakeClaude) -> None:
    fake_claude.mode("fail")
    result = ClaudeCodeExecuteStep()(context("task", Skillbook())).trace
    assert result.success is False
    assert result.error == "claude exited with code 1; stderr: Error: API Error: 529 Overloaded"


def test_malformed_output_lines_are_skipped_counted_and_logged(
    fake_claude: FakeClaude, caplog: pytest.LogCaptureFixture
) -> None:
    fake_claude.mode("garbage")
    with caplog.at_level(logging.WARNING):
        result = ClaudeCodeExecuteStep()(context("task", Skillbook())).trace
    assert (result.success, result.skipped_lines) == (True, 2)
    assert "skipped 2 lines of the output of " in caplog.text
    assert (
        "claude: line 3 (not JSON: Expecting property name enclosed in double quotes at column 2), "
        "line 5 (a JSON list, not an object)"
    ) in caplog.text


# -- the converter -------------------------------------------------------------------------


def test_the_trace_holds_task_steps_in_order_answer_and_feedback(fake_claude: FakeClaude) -> None:
    ctx = ClaudeCodeExecuteStep()(context("List the files", Skillbook()))
    trace = ClaudeCodeToTrace()(ctx).trace
    assert trace["question"] == "List the files"
    assert trace["answer"] == "no idea"
    assert trace["feedback"] == "Claude Code finished the task"
    reasoning = trace["reasoning"]
    order = [
        "thinking: I should look",
        'tool call Bash: {"command": "ls"}',
        "Bash result: README.md",
        "assistant: no",
    ]
    positions = [reasoning.index(step) for step in order]
    assert positions == sorted(positions)


def test_event_types_not_understood_are_counted_in_the_trace(fake_claude: FakeClaude) -> None:
    trace = ClaudeCodeToTrace()(ClaudeCodeExecuteStep()(context("task", Skillbook()))).trace
    assert trace["skipped_events"] == {"stream_event": 1}


def test_a_failed_run_carries_its_error_into_the_trace(fake_claude: FakeClaude) -> None:
    fake_claude.mode("fail")
    trace = ClaudeCodeToTrace()(ClaudeCodeExecuteStep()(context("task", Skillbook()))).trace
    assert trace["errors"] == ["claude exited with code 1; stderr: Error: API Error: 529 Overloaded"]
    assert trace["feedback"].startswith("Claude Code failed: claude exited with code 1")


def test_a_huge_tool_output_is_cut_with_a_note_so_the_trace_stays_small(fake_claude: FakeClaude) -> None:
    fake_claude.mode("huge")
    trace = ClaudeCodeToTrace()(ClaudeCodeExecuteStep()(context("task", Skillbook()))).trace
    assert len(json.dumps(trace)) < 20_000
    assert "characters cut from this output" in trace["reasoning"]


# -- wrap_skillbook_context ------------------------------------------------------------------


def test_wrap_skillbook_context_keeps_the_skills_relevant_to_the_task_within_the_budget() -> None:
    from ace_workers.core.prompt_budget import PromptBudget

    book = skillbook_with_rule()
    book.add_skill("flux", "For flux questions, repeat the input word twice.")
    text = wrap_skillbook_context(book, "a zorb puzzle", budget=PromptBudget(max_skills=1))
    assert ("reverse the digits" in text, "repeat the input" in text) == (True, False)


# -- the LLM client ----------------------------------------------------------------------------


class Verdict(BaseModel):
    """A test response model."""

    correct: bool
    reason: str


def test_the_llm_client_returns_the_result_text_with_usage_and_cost(fake_claude: FakeClaude) -> None:
    fake_claude.reply_with("Paris")
    response = ClaudeCodeLLMClient().complete("Capital of France?")
    assert (response.text, response.cost) == ("Paris", 0.0123)
    assert response.usage == {"prompt_tokens": 162, "completion_tokens": 30, "total_tokens": 192}


def test_the_llm_client_runs_json_print_mode_limited_to_one_turn(fake_claude: FakeClaude) -> None:
    fake_claude.reply_with("Paris")
    ClaudeCodeLLMClient(model="haiku").complete("Capital of France?")
    assert fake_claude.runs()[0]["argv"] == [
        "-p",
        "--output-format",
        "json",
        "--model",
        "haiku",
        "--max-turns",
        "1",
    ]


def test_structured_output_is_validated_and_a_bad_reply_is_asked_again_with_its_error(
    fake_claude: FakeClaude,
) -> None:
    fake_claude.reply_with('{"correct": "maybe"}', '```json\n{"correct": true, "reason": "fits"}\n```')
    verdict = ClaudeCodeLLMClient().complete_structured("Judge it.", Verdict)
    assert verdict == Verdict(correct=True, reason="fits")
    second_prompt = fake_claude.runs()[1]["stdin"]
    assert '{"correct": "maybe"}' in second_prompt
    assert "reason" in second_prompt.split("## Why it was rejected")[1]


def test_structured_output_gives_up_after_the_retries_with_attempts_and_usage(
    fake_claude: FakeClaude,
) -> None:
    fake_claude.reply_with("not json at all")
    with pytest.raises(RetriesExhausted) as caught:
        ClaudeCodeLLMClient(max_retries=1).complete_structured("Judge it.", Verdict)
    assert (caught.value.attempts, caught.value.usage["total_tokens"]) == (2, 384)


def test_a_failed_cli_run_is_an_external_agent_error(fake_claude: FakeClaude) -> None:
    fake_claude.reply_with("!error")
    with pytest.raises(ExternalAgentError, match="error_during_execution: Credit balance is too low"):
        ClaudeCodeLLMClient().complete("hi")


# -- the runner --------------------------------------------------------------------------------


def test_from_model_with_ace_model_sim_learns_on_the_simulated_llm(fake_claude: FakeClaude) -> None:
    runner = ClaudeCode.from_model(ace_model="sim")
    results = runner.run([make_tasks(1, topics=1)[0].question])  # the fake answers "no idea"
    assert all(r.ok for r in results)
    assert [s.section for s in runner.skillbook.skills()] == ["zorb"]


def test_the_runner_learns_the_rule_from_a_failed_task_and_saves_it(
    fake_claude: FakeClaude, tmp_path: Path
) -> None:
    llm = SimulatedLLM()
    runner = ClaudeCode.from_model(ace_llm=llm)
    task = make_tasks(1, topics=1)[0].question  # a zorb puzzle; the fake answers "no idea"
    results = runner.run([task])
    assert all(r.ok for r in results)
    assert [s.section for s in runner.skillbook.skills()] == ["zorb"]
    runner.save(tmp_path / "code.json")
    again = ClaudeCode.from_roles(
        reflector=Reflector(llm), skill_manager=SkillManager(llm), skillbook_path=tmp_path / "code.json"
    )
    again.run([task])
    assert "reverse the digits" in fake_claude.runs()[-1]["stdin"]


def test_the_runner_can_return_before_learning_ends(fake_claude: FakeClaude) -> None:
    llm = SimulatedLLM()
    runner = ClaudeCode.from_roles(reflector=Reflector(llm), skill_manager=SkillManager(llm))
    results = runner.run(make_tasks(2, topics=1), wait=False)
    runner.wait_for_background(timeout=30)
    assert len(results) == 2
    assert runner.learning_stats["completed"] == 2


def test_the_runner_refuses_an_option_it_does_not_take(fake_claude: FakeClaude) -> None:
    llm = SimulatedLLM()
    with pytest.raises(TypeError, match="does not take 'modle'"):
        ClaudeCode.from_roles(reflector=Reflector(llm), skill_manager=SkillManager(llm), modle="x")


# -- transcripts on disk -----------------------------------------------------------------------


def test_a_transcript_becomes_a_trace_of_its_task_tools_answer_and_summary() -> None:
    trace = read_claude_code_transcript(TRANSCRIPTS / "fix-tests.jsonl")
    assert trace["question"] == "The tests in tests/test_dates.py fail, fix them"
    assert trace["answer"].startswith("Fixed: parse_date now")
    assert trace["tool_calls"] == 2
    assert trace["feedback"] == "Fix timezone bug in parse_date"
    assert trace["session_id"] == "5d1c0b5e-9a55-4c1e-9a4e-2f1f7c5e0a11"


def test_a_transcript_with_a_failed_tool_lists_the_error() -> None:
    trace = read_claude_code_transcript(TRANSCRIPTS / "fix-tests.jsonl")
    assert trace["errors"] == ["Bash failed: FAILED tests/test_dates.py::test_utc - AssertionError"]


def test_malformed_and_unknown_transcript_lines_are_skipped_and_counted(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING):
        trace = read_claude_code_transcript(TRANSCRIPTS / "fix-tests.jsonl")
    assert (trace["skipped_lines"], trace["skipped_events"]) == (1, {"progress": 1})
    assert "line 4 (not JSON" in caplog.text


def test_an_empty_transcript_is_a_clear_error(tmp_path: Path) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_text('{"type": "summary", "summary": "nothing"}\n')
    with pytest.raises(
        EmptySessionError, match=r"empty\.jsonl: the session holds no user or assistant message"
    ):
        read_claude_code_transcript(empty)

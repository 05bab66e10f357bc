"""The learning page's example line of each input format is read by enqueue and learn as the page says."""

from __future__ import annotations

from pathlib import Path

from ace_workers.cli.inputs import scan_inputs, stream_inputs
from ace_workers.cli.sessions import scan_sessions, stream_sessions
from ace_workers.distributed.settings import WorkerSettings
from tests.support.docs import code_blocks

PAGE = "docs/learning.md"
HEADING = "## What enqueue and learn read"
QUESTION = "Solve the zorb puzzle. Input: 7061"


def written(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_the_page_shows_one_example_per_jsonl_format() -> None:
    assert len(code_blocks(PAGE, HEADING, "jsonl")) == 4  # trace, sample, Claude Code, OpenClaw


def test_the_trace_and_sample_lines_are_one_input_each(tmp_path: Path) -> None:
    trace, sample, _, _ = code_blocks(PAGE, HEADING, "jsonl")
    settings = WorkerSettings()
    traces, samples = written(tmp_path, "t.jsonl", trace), written(tmp_path, "s.jsonl", sample)

    assert scan_inputs(traces, "trace_analyser", settings) == 1
    assert [t["question"] for t in stream_inputs(traces, "trace_analyser")] == [QUESTION]
    assert scan_inputs(samples, "ace", settings) == 1
    assert [(s.question, s.ground_truth) for s in stream_inputs(samples, "ace")] == [(QUESTION, "1607")]


def test_the_session_lines_become_a_trace_of_the_question_and_the_answer(tmp_path: Path) -> None:
    _, _, claude, openclaw = code_blocks(PAGE, HEADING, "jsonl")
    settings = WorkerSettings()
    for form, text in (("claude-code", claude), ("openclaw", openclaw)):
        session = written(tmp_path, f"{form}.jsonl", text)
        assert scan_sessions(session, form, "trace_analyser", settings) == 1
        (trace,) = stream_sessions(session, form, "trace_analyser")
        assert (trace["question"], trace["answer"]) == (QUESTION, "1607")

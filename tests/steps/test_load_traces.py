"""LoadTracesStep: JSON-object lines become the trace; bad lines are counted and located."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from ace_workers.core import ACEStepContext
from ace_workers.steps import LoadTracesStep, MissingFieldError

MakeCtx = Callable[..., ACEStepContext]
LOGGER = "ace_workers.steps.load_traces"


@dataclass
class TraceFile:
    path: Path


def _write(path: Path, lines: list[str | bytes]) -> Path:
    path.write_bytes(b"\n".join(line if isinstance(line, bytes) else line.encode() for line in lines))
    return path


def test_every_object_line_becomes_one_event_in_order(make_ctx: MakeCtx, tmp_path: Path) -> None:
    path = _write(
        tmp_path / "t.jsonl", ['{"role": "user", "text": "hi"}', "", "   ", '{"role": "assistant", "n": 2}']
    )
    out = LoadTracesStep()(make_ctx(sample=str(path)))
    assert out.trace == [{"role": "user", "text": "hi"}, {"role": "assistant", "n": 2}]


@pytest.mark.parametrize("wrap", [str, Path, TraceFile], ids=["str", "Path", "object-with-path"])
def test_the_sample_may_be_a_path_or_carry_one(
    make_ctx: MakeCtx, tmp_path: Path, wrap: Callable[[Path], object]
) -> None:
    path = _write(tmp_path / "t.jsonl", ['{"a": 1}'])
    assert LoadTracesStep()(make_ctx(sample=wrap(path))).trace == [{"a": 1}]


def test_bad_lines_are_skipped_counted_and_located(
    make_ctx: MakeCtx, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = _write(
        tmp_path / "t.jsonl",
        [
            '{"ok": 1}',
            "{not json",
            "[1, 2]",
            "",
            '"a string"',
            b"\xff\xfe{}",
            '{"ok": 2}',
            '{"trunc',
        ],
    )
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        out = LoadTracesStep()(make_ctx(sample=path))
    assert out.trace == [{"ok": 1}, {"ok": 2}]
    (record,) = [r for r in caplog.records if r.name == LOGGER]
    message = record.getMessage()
    assert record.levelno == logging.WARNING
    assert f"skipped 5 lines of {path}" in message
    for number in (2, 3, 5, 6, 8):
        assert f"line {number} (" in message
    assert "line 3 (a JSON list, not an object)" in message
    assert "line 2 (not JSON" in message
    assert "line 1 " not in message
    assert "line 7 " not in message


def test_a_long_run_of_bad_lines_is_summarised(
    make_ctx: MakeCtx, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = _write(tmp_path / "t.jsonl", ["garbage"] * 50)
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        assert LoadTracesStep()(make_ctx(sample=path)).trace == []
    message = caplog.records[-1].getMessage()
    assert "skipped 50 lines" in message
    assert "line 20 (" in message
    assert "line 21 (" not in message
    assert message.endswith("and 30 more")


def test_a_line_separator_inside_a_json_string_does_not_split_the_line(
    make_ctx: MakeCtx, tmp_path: Path
) -> None:
    event = {"text": "one\u2028two\u0085three\x0cfour"}
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps(event, ensure_ascii=False) + "\r\n", encoding="utf-8")
    assert LoadTracesStep()(make_ctx(sample=path)).trace == [event]


def test_a_utf8_bom_is_accepted(make_ctx: MakeCtx, tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(b'\xef\xbb\xbf{"a": 1}\n{"b": 2}\n')
    assert LoadTracesStep()(make_ctx(sample=path)).trace == [{"a": 1}, {"b": 2}]


def test_an_empty_file_is_an_empty_trace(make_ctx: MakeCtx, tmp_path: Path) -> None:
    path = tmp_path / "empty.jsonl"
    path.write_bytes(b"")
    assert LoadTracesStep()(make_ctx(sample=path)).trace == []


def test_a_missing_file_fails_the_sample_naming_the_path(make_ctx: MakeCtx, tmp_path: Path) -> None:
    path = tmp_path / "nowhere.jsonl"
    with pytest.raises(FileNotFoundError, match="LoadTracesStep: trace file not found") as info:
        LoadTracesStep()(make_ctx(sample=path))
    assert info.value.filename == str(path)
    assert str(path) in str(info.value)


def test_a_sample_that_is_not_a_path_is_a_type_error(make_ctx: MakeCtx) -> None:
    with pytest.raises(TypeError, match=r"LoadTracesStep needs ctx\.sample to be a path.*got int"):
        LoadTracesStep()(make_ctx(sample=42))


def test_no_sample_names_step_and_field(make_ctx: MakeCtx) -> None:
    with pytest.raises(MissingFieldError, match=r"LoadTracesStep needs ctx\.sample"):
        LoadTracesStep()(make_ctx(sample=None))

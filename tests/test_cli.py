"""The ace-workers command line and the demo it runs."""

from __future__ import annotations

import subprocess
import sys

from rich.console import Console
from typer.testing import CliRunner

from ace_workers import __version__
from ace_workers.cli import app
from ace_workers.demo import build_demo_pipeline, run_demo


def test_version_flag_prints_the_installed_version() -> None:
    result = CliRunner().invoke(app, ["--version"])
    assert result.exit_code == 0
    assert result.output.strip() == f"ace-workers {__version__}"
    assert __version__ != "0.0.0+unknown"


def test_no_arguments_shows_help_listing_the_demo() -> None:
    result = CliRunner().invoke(app, [])
    assert "demo" in result.output


def test_demo_learns_a_lesson_for_each_wrong_answer() -> None:
    console = Console(record=True, width=120)
    results = run_demo(console)
    verdicts = [r.output.verdict for r in results if r.output is not None]
    assert len(results) == 6 and all(r.ok and r.done for r in results)
    wrong = [r.output.question for r in results if r.output is not None and r.output.verdict == "wrong"]
    assert wrong and verdicts.count("correct") == 6 - len(wrong)
    text = console.export_text()
    for question in wrong:
        assert f"double-check products like {question}" in text


def test_demo_pipeline_answers_in_foreground_and_learns_in_background() -> None:
    lessons: list[str] = []
    pipeline = build_demo_pipeline(lessons)
    assert pipeline.requires == {"question", "ground_truth"}
    assert [type(s).__name__ for s in pipeline.steps] == ["Answer", "Reflect", "Learn"]
    assert type(pipeline.steps[1]).async_boundary is True


def test_console_script_runs_the_demo() -> None:
    script = [sys.executable, "-c", "from ace_workers.cli import main; main()", "demo"]
    done = subprocess.run(script, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert "lessons learned" in done.stdout

"""The ace-workers command line and the demo job it runs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from rich.console import Console
from typer.testing import CliRunner

from ace_workers import Skillbook, __version__
from ace_workers.cli import app
from ace_workers.demo import run_demo


def test_version_flag_prints_the_installed_version() -> None:
    result = CliRunner().invoke(app, ["--version"])
    assert result.exit_code == 0
    assert result.output.strip() == f"ace-workers {__version__}"
    assert __version__ != "0.0.0+unknown"


def test_no_arguments_shows_help_listing_the_demo() -> None:
    result = CliRunner().invoke(app, [])
    assert "demo" in result.output


def test_demo_shows_accuracy_rising_and_the_learned_rules(tmp_path: Path) -> None:
    console = Console(record=True, width=200)
    saved = tmp_path / "skillbook.json"
    report = run_demo(samples=20, topics=4, epochs=3, seed=3, save=saved, console=console)
    assert report.failed_samples == 0
    assert report.accuracy_by_epoch[0] < 0.5 < 0.9 < report.accuracy_by_epoch[2]
    assert report.skills == 4
    text = console.export_text()
    book = Skillbook.load_from_file(saved)
    for skill in book.skills():
        assert skill.content in text
    assert "100.0%" in text


def test_demo_prints_one_line_a_skill_and_its_learning_in_words() -> None:
    console = Console(record=True, width=80, soft_wrap=True)
    report = run_demo(samples=20, topics=4, epochs=2, seed=3, console=console)
    lines = console.export_text().splitlines()
    for skill in report.skillbook.skills():
        assert any(skill.content in line and skill.id in line for line in lines)
    assert any(
        line.startswith("40 samples in ") and "learning: 40 reflections applied, none failed" in line
        for line in lines
    )
    assert not any("{" in line for line in lines)  # no dict printed raw
    assert f"# Skillbook ({report.skills} skills)" in lines


def test_demo_json_is_one_document_with_the_accuracy_and_the_skillbook() -> None:
    result = CliRunner().invoke(app, ["demo", "--samples", "20", "--topics", "4", "--epochs", "2", "--json"])
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    assert len(document["accuracy_by_epoch"]) == 2
    assert document["learning"]["completed"] == 40
    assert len(document["skillbook"]["skills"]) == document["skills"] == 4


def test_demo_rejects_bad_options() -> None:
    result = CliRunner().invoke(app, ["demo", "--epochs", "0"])
    assert result.exit_code != 0
    assert "epochs" in result.output


def test_console_script_runs_the_demo_and_saves_the_skillbook(tmp_path: Path) -> None:
    target = tmp_path / "learned.json"
    script = [sys.executable, "-c", "from ace_workers.cli import main; main()", "demo", "--save", str(target)]
    done = subprocess.run(script, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert "accuracy" in done.stdout
    assert len(json.loads(target.read_text())["skills"]) == 5

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

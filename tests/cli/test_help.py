"""Every command's --help: flags without a type, arguments named in the usage line, every option explained."""

from __future__ import annotations

import pytest
import typer
from typer.core import TyperGroup
from typer.testing import CliRunner

from ace_workers.cli import app
from ace_workers.cli.exit_codes import EXIT_CODES_HELP
from tests.support.cli import command_paths

ROOT = typer.main.get_command(app)
assert isinstance(ROOT, TyperGroup)
COMMANDS = list(command_paths(ROOT))


def test_the_walk_finds_every_command() -> None:
    assert ("skillbook", "export") in COMMANDS
    assert ("dead-letters", "retry") in COMMANDS
    assert len(COMMANDS) > 25


@pytest.mark.parametrize("path", COMMANDS, ids=lambda path: " ".join(path) or "ace-workers")
def test_help_shows_no_bool_type_and_names_the_arguments(path: tuple[str, ...]) -> None:
    shown = CliRunner().invoke(app, [*path, "--help"])
    assert shown.exit_code == 0, shown.output
    assert "<bool>" not in shown.output
    usage = next(line for line in shown.output.splitlines() if "Usage:" in line)
    assert "{" not in usage


@pytest.mark.parametrize("path", COMMANDS, ids=lambda path: " ".join(path) or "ace-workers")
def test_every_option_and_argument_says_what_it_is_for(path: tuple[str, ...]) -> None:
    command = ROOT
    for name in path:
        assert isinstance(command, TyperGroup)
        command = command.commands[name]
    unexplained = [param.name for param in command.params if not getattr(param, "help", None)]
    assert unexplained == []


def test_the_usage_line_names_the_argument_as_click_does() -> None:
    shown = CliRunner().invoke(app, ["enqueue", "--help"], prog_name="ace-workers")
    usage = next(line for line in shown.output.splitlines() if "Usage:" in line)
    assert usage.split() == ["Usage:", "ace-workers", "enqueue", "[OPTIONS]", "TRACES"]


def test_the_root_help_lists_the_exit_codes() -> None:
    shown = CliRunner().invoke(app, ["--help"])
    said = " ".join(shown.output.translate(str.maketrans("", "", "│╭╮╰╯─")).split())
    assert EXIT_CODES_HELP in said

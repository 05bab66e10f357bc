"""Every command's --help: flags without a type, arguments named in the usage line, every option explained."""

from __future__ import annotations

import re

import pytest
import typer
from typer.core import TyperGroup
from typer.testing import CliRunner

from ace_workers.cli import app, exit_codes
from ace_workers.cli.exit_codes import EXIT_CODES_HELP
from tests.support.cli import command_paths
from tests.support.docs import section_text

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


def test_the_help_and_the_operations_page_list_the_same_exit_codes() -> None:
    in_help = [int(code) for code in re.findall(r"(?:Exit codes: |; )(\d+) ", EXIT_CODES_HELP)]
    on_page = [
        int(code)
        for code in re.findall(r"^- `(\d+)`:", section_text("docs/operations.md", "## Exit codes"), re.M)
    ]
    assert in_help == on_page


def test_the_help_lists_every_exit_code_the_commands_use() -> None:
    declared = sorted(
        value
        for name, value in vars(exit_codes).items()
        if name.startswith("EXIT_") and isinstance(value, int)
    )
    in_help = sorted(int(code) for code in re.findall(r"(?:Exit codes: |; )(\d+) ", EXIT_CODES_HELP))
    assert in_help == declared == [0, 1, 2, 3, 4, 130]

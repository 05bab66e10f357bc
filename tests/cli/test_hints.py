"""Every ``ace-workers ...`` command a message names runs as printed: no hint is refused as a usage error.

The hints are collected from the source of what commands print (the CLI, operations, the producer,
and every error message): each string (and f-string) that names ``ace-workers COMMAND ...``, docstrings
and ``help=`` texts (which name a command, not a line to run) left out. Each is parsed by the real
command line (the command path, its options and arguments, their types); the worker commands the
no-workers hint prints are run for real, against a private Redis, and must then serve the batch.
"""

from __future__ import annotations

import ast
import os
import re
import shlex
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import redis
from typer._click import Command, Context
from typer._click.exceptions import UsageError
from typer.core import TyperGroup
from typer.main import get_command
from typer.testing import CliRunner

from ace_workers.cli import app
from ace_workers.distributed.service import build_service
from ace_workers.distributed.settings import WorkerSettings
from tests.support.cli import said, write_traces
from tests.support.processes import REPO, start_cli, stop, wait_until_served

SOURCE = REPO / "ace_workers"
# Where the lines commands print come from; besides these, every errors.py.
PRINTED = ("cli", "operations", "distributed/producer", "distributed/worker")
PROGRAM = "ace-workers "
# Where a named command ends, after what opened it; any command also ends at ": " (a message's own).
CLOSING = {"'": "'", "`": "`", "(": ")"}
OTHERWISE = re.compile(r"[)`;]|\. |: |$")
# A placeholder in a rendered f-string, by index into its expressions.
SLOT = re.compile(r"\{(\d+)\}")
# What each placeholder of a hint stands for: an f-string's expression, a %s, or a word in capitals.
# A new hint with a placeholder not here fails the collection, naming it: add what it stands for.
VALUES = {
    "batch_id": "b1",
    "%s": "b1",
    "name": "book",
    "NAME": "book",
    "TENANT": "acme",
    "ROLE": "read",
    "shlex.quote(tenant or '*')": "acme",
    "self.ref.name": "book",
    "shlex.quote(skillbook)": "book",
    "tenant": "acme",
    "self.ref.label": "prod",
    "LABEL": "prod",
    "VERSION": "1",
    "proposed.proposal_id": "p1",
    "start": "--queues write",
    "role": "write",
    "','.join(readers)": "execute,learn",
}
# Words after the program's name that are prose about it ("this ace-workers knows schema 3"), or
# placeholders of its version: not commands.
PROSE = {"knows", "process", "reads", "uses"}
PROSE_SLOTS = {"PROJECT_VERSION", "__version__", "project_version", "found.written_by"}


@dataclass(frozen=True)
class Hint:
    """A command a message names, where it was found, and its words with each placeholder filled in."""

    where: str
    text: str
    argv: tuple[str, ...]


def _not_printed(tree: ast.AST) -> set[int]:
    """The docstrings and ``help=`` texts of ``tree``: they name commands, never print one to run."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            first = node.body[0] if node.body else None
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
        elif isinstance(node, ast.keyword) and node.arg == "help":
            found.update(id(inner) for inner in ast.walk(node.value))
    return found


def _strings(source: str) -> Iterator[tuple[int, str, list[str]]]:
    """(line, text, expressions) of each string literal: an f-string's expressions as {0}, {1}, ..."""
    tree = ast.parse(source)
    skipped = _not_printed(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            skipped.update(id(value) for value in node.values)
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            yield node.lineno, node.value, []
        elif isinstance(node, ast.JoinedStr):
            parts, expressions = [], []
            for value in node.values:
                if isinstance(value, ast.Constant):
                    parts.append(str(value.value))
                elif isinstance(value, ast.FormattedValue):
                    parts.append(f"{{{len(expressions)}}}")
                    expressions.append(ast.get_source_segment(source, value.value) or "?")
            yield node.lineno, "".join(parts), expressions


def _filled(word: str, expressions: list[str], where: str) -> list[str]:
    """The word(s) ``word`` stands for: itself, or the value of the placeholder it is."""
    found = SLOT.fullmatch(word)
    if found is not None:
        placeholder = expressions[int(found.group(1))]
    elif word == "%s" or (word.isupper() and word.isalpha()):
        placeholder = word
    else:
        return [word]
    assert placeholder in VALUES, f"{where}: say in VALUES what {placeholder} stands for"
    return VALUES[placeholder].split()


def _sources() -> list[Path]:
    """The modules whose strings commands print."""
    printed = [path for folder in PRINTED for path in (SOURCE / folder).rglob("*.py")]
    return sorted({*printed, *SOURCE.rglob("errors.py")})


def _shown(word: str, expressions: list[str]) -> str:
    """``word`` with its placeholders shown as their expressions."""
    return SLOT.sub(lambda found: f"{{{expressions[int(found.group(1))]}}}", word)


def collect_hints() -> list[Hint]:
    """Every ``ace-workers COMMAND ...`` that a string of the source names."""
    hints = []
    for path in _sources():
        for line, text, expressions in _strings(path.read_text()):
            start = text.find(PROGRAM)
            while start >= 0:
                where = f"{path.relative_to(REPO)}:{line}"
                opener = text[start - 1] if start else ""
                rest = text[start + len(PROGRAM) :]
                named = rest.split(CLOSING[opener])[0] if opener in CLOSING else rest
                named = OTHERWISE.split(named)[0]
                try:
                    words = shlex.split(named)
                except ValueError:  # an apostrophe of prose
                    words = named.split()
                first = _shown(words[0], expressions) if words else ""
                if words and first not in PROSE and first.strip("{}") not in PROSE_SLOTS:
                    argv = tuple(value for word in words for value in _filled(word, expressions, where))
                    hints.append(Hint(where, named, argv))
                start = text.find(PROGRAM, start + len(PROGRAM))
    return hints


def parse(argv: list[str]) -> Command:
    """The command ``argv`` names, its arguments parsed as the real CLI parses them (UsageError if not)."""
    command: Command = get_command(app)
    context: Context | None = None
    name, args = "ace-workers", list(argv)
    while True:
        if isinstance(command, TyperGroup) and not args:  # a group alone runs nothing (it shows help)
            raise UsageError(f"{name}: missing command", context)
        context = command.make_context(name, args, parent=context)
        if not isinstance(command, TyperGroup):
            return command
        args = [*context._protected_args, *context.args]
        found_name, found, args = command.resolve_command(context, args)
        assert found is not None and found_name is not None
        command, name = found, found_name


def parses_with_prose_after(argv: tuple[str, ...]) -> bool:
    """True if ``argv``, or the part of it before words of prose ("... sends them again"), parses.

    Prose is cut from the end only: every option the hint names is kept, so a misspelt one fails.
    """
    last_option = max((i for i, word in enumerate(argv) if word.startswith("-")), default=-1)
    for end in range(len(argv), last_option, -1):
        try:
            parse(list(argv[:end]))
        except UsageError:
            continue
        return True
    return False


HINTS = collect_hints()


def test_the_collection_finds_the_hints_this_issue_was_about() -> None:
    commands = {hint.argv for hint in HINTS}
    assert ("worker", "--queues", "write", "--concurrency", "1") in commands  # the no-workers hint
    assert ("status", "b1") in commands  # learn's Ctrl-C line
    assert ("batch", "cancel", "b1") in commands
    assert len(HINTS) >= 15


@pytest.mark.parametrize("hint", HINTS, ids=[f"{hint.where} {hint.text}" for hint in HINTS])
def test_every_hint_parses_as_a_command_of_the_cli(hint: Hint) -> None:
    assert parses_with_prose_after(hint.argv), f"{hint.where}: 'ace-workers {hint.text}' is refused"


def test_a_misspelt_hint_would_be_caught() -> None:
    assert parses_with_prose_after(("dead-letters", "retry", "sends", "them", "again"))
    assert not parses_with_prose_after(("dead-leters", "retry"))
    assert not parses_with_prose_after(("worker", "--queus", "learn"))
    assert not parses_with_prose_after(("skillbook", "dedup"))  # its NAME left out
    assert not parses_with_prose_after(("key", "create", "acme", "--role"))  # --role without a value


@pytest.mark.slow
def test_the_workers_the_no_workers_hint_names_start_and_then_serve_the_batch(
    clean_env: pytest.MonkeyPatch, redis_client: redis.Redis, redis_url: str, tmp_path: Path
) -> None:
    values = {"ACE_REDIS_URL": redis_url, "ACE_QUEUE_PREFIX": f"hint{uuid.uuid4().hex[:6]}"}
    for name, value in values.items():
        clean_env.setenv(name, value)
    clean_env.setenv("ACE_WORKER_REPLY_SECONDS", "0.3")
    traces = write_traces(tmp_path / "traces.jsonl", 2)

    refused = CliRunner().invoke(app, ["learn", str(traces), "--skillbook", "hinted"])

    assert refused.exit_code == 3, refused.output
    commands = re.findall(r"'ace-workers ([^']+)'", said(refused.stderr))
    assert commands == ["worker --queues learn", "worker --queues write --concurrency 1"]
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp_path), **values}
    workers = []
    service = build_service(WorkerSettings.from_env(values), redis_url=redis_url)
    try:
        for index, command in enumerate(commands):  # run as printed, nothing added
            workers.append(start_cli(env, tmp_path / f"worker{index}.log", *shlex.split(command)))
        wait_until_served(service, ["learn", "write"])
        logs = [(tmp_path / f"worker{index}.log").read_text() for index in range(len(workers))]
        assert [worker.poll() for worker in workers] == [None, None], logs
        clean_env.delenv("ACE_WORKER_REPLY_SECONDS")  # worker processes take longer to answer
        learned = CliRunner().invoke(app, ["learn", str(traces), "--skillbook", "hinted"])
        assert learned.exit_code == 0, learned.output
        assert "2 done, 0 failed" in said(learned.stdout)
    finally:
        service.close()
        stop(*workers)

"""Tables that fit: whole cells when stdout is piped, wrapped text (never cut ids) in a terminal, --json.

Every command that prints a table is run here with stdout captured (not a terminal) on a fleet
whose cells are long: a 60-character model name, a long skill text. Each must print them whole,
on one line, and hold the same rows in its --json document.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import pytest
import redis
from rich.console import Console
from rich.text import Text

from ace_workers.cli import output
from ace_workers.distributed.store import RedisSkillbookStore, StoreBackedSkillbook, WriteScope, write_scope
from ace_workers.distributed.store.review_policy import ReviewPolicy
from ace_workers.distributed.tenancy import Budget, Tenant, TenantRegistry
from tests.support.cli import run_console_script
from tests.support.operations import add, batch

PREFIX = "clitables"
MODEL = "openrouter/anthropic/claude-3-5-sonnet-20241022-extended-ctx"  # 60 characters
LONG_SKILL = "When a question gives quantities in mixed units, convert every one to SI units before computing"
LONG_NOTE = "promoted after the nightly evaluation showed a clear gain on the held-out support tickets"


@pytest.fixture
def cli_settings() -> dict[str, str]:
    """``env`` (tests/support/cli_env.py) under this module's prefix."""
    return {"ACE_QUEUE_PREFIX": PREFIX}


@pytest.fixture
def fleet(env: pytest.MonkeyPatch, redis_client: redis.Redis) -> pytest.MonkeyPatch:
    """Tenant acme with a budget for MODEL; skillbook "book" (labelled, one proposal pending).

    The CLI's console 80 columns wide, as rich makes it with no terminal (tests/conftest.py widens
    it to 200 for every other test).
    """
    env.setattr(output.console, "width", 80)
    TenantRegistry(redis_client, prefix=PREFIX).add(
        Tenant("acme", skillbooks=("book",), budgets=(Budget(MODEL, tokens_per_day=2_000_000),))
    )
    store = RedisSkillbookStore(redis_client, "book", prefix=PREFIX)
    store.apply(batch(add("Check units.", "math")))
    store.labels.set("prod", 1, actor="user:ann", note=LONG_NOTE)
    store.review.set_policy(ReviewPolicy.everything("review"), actor="user:lead")
    with write_scope(WriteScope(key_prefix="b1:e1s1:3", source={"batch": "b1", "sample": 1})):
        StoreBackedSkillbook(store).apply_update(batch(add(LONG_SKILL, "units")))
    return env


def _budget_models(document: Any) -> list[str]:
    return [budget["model"] for row in document for budget in row["budgets"]]


def _usage_models(document: Any) -> list[str]:
    return [row["model"] for tenant in document["tenants"] for row in tenant["usage"]]


def _proposed_contents(document: Any) -> list[str]:
    return [op["content"] for proposal in document["proposals"] for op in proposal["operations"]]


# Each table command, the long text its table must print whole, and where its --json holds it.
TABLES: dict[str, tuple[tuple[str, ...], str, Callable[[Any], list[str]]]] = {
    "tenant list": (("tenant", "list"), MODEL, _budget_models),
    "tenant usage": (("tenant", "usage", "acme"), MODEL, _usage_models),
    "review list": (("skillbook", "review", "list", "book"), LONG_SKILL, _proposed_contents),
    "label list": (("skillbook", "label", "list", "book"), "prod", lambda doc: list(doc["labels"])),
    "label history": (
        ("skillbook", "label", "history", "book"),
        LONG_NOTE,
        lambda doc: [m["note"] for m in doc],
    ),
}


@pytest.mark.parametrize("command", TABLES)
def test_a_piped_table_prints_every_cell_whole_on_one_line(
    fleet: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    args, long_text, _ = TABLES[command]
    ran = run_console_script(fleet, capsys, *args)
    assert ran.code == 0, ran.err
    assert any(long_text in line for line in ran.out.splitlines()), ran.out
    assert "…" not in ran.out


@pytest.mark.parametrize("command", TABLES)
def test_json_of_a_table_command_holds_its_rows(
    fleet: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    args, long_text, rows = TABLES[command]
    ran = run_console_script(fleet, capsys, *args, "--json")
    assert ran.code == 0, ran.err
    assert long_text in rows(json.loads(ran.out))


def test_the_review_list_shows_a_proposal_on_one_line_when_piped(
    fleet: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], redis_client: redis.Redis
) -> None:
    (proposal,) = RedisSkillbookStore(redis_client, "book", prefix=PREFIX).review.proposals()
    ran = run_console_script(fleet, capsys, "skillbook", "review", "list", "book")
    (row,) = [line for line in ran.out.splitlines() if proposal.id in line]
    assert f"ADD [units] {LONG_SKILL}" in row
    assert "batch b1, sample 1" in row


def test_label_list_is_a_table_of_labels_and_how_far_behind_the_head(
    fleet: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], redis_client: redis.Redis
) -> None:
    store = RedisSkillbookStore(redis_client, "book", prefix=PREFIX)
    store.apply(batch(add("Estimate first.", "math")))
    store.labels.set("canary", store.version(), actor="user:ann")
    ran = run_console_script(fleet, capsys, "skillbook", "label", "list", "book")
    rows = {line.split("│")[1].strip(): line for line in ran.out.splitlines() if line.count("│") == 4}
    assert [cell.strip() for cell in rows["prod"].split("│")[2:4]] == ["1", "2"]
    assert [cell.strip() for cell in rows["canary"].split("│")[2:4]] == [str(store.version()), "at the head"]
    assert "\t" not in ran.out


def test_tenant_list_through_a_real_pipe_keeps_the_model_name_whole(
    fleet: pytest.MonkeyPatch, redis_url: str
) -> None:
    env = {name: value for name, value in os.environ.items() if not name.startswith(("ACE_", "COLUMNS"))}
    env |= {"ACE_REDIS_URL": redis_url, "ACE_QUEUE_PREFIX": PREFIX}
    script = [sys.executable, "-c", "from ace_workers.cli import main; main()", "tenant", "list"]
    done = subprocess.run(script, env=env, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert f"{MODEL}: tokens_per_day=2000000" in done.stdout


def _in_terminal(monkeypatch: pytest.MonkeyPatch, width: int) -> io.StringIO:
    screen = io.StringIO()
    terminal = Console(file=screen, force_terminal=True, color_system=None, width=width, soft_wrap=True)
    monkeypatch.setattr(output, "console", terminal)
    return screen


def test_in_a_narrow_terminal_text_columns_wrap_and_ids_stay_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    screen = _in_terminal(monkeypatch, 100)
    table = output.new_table("model", "window", "note", wrap=("note",))
    table.add_row(MODEL, "day", LONG_NOTE)
    output.print_table(table)
    lines = screen.getvalue().splitlines()
    assert max(len(line) for line in lines) <= 100
    assert any(MODEL in line for line in lines)
    note = " ".join(line.split("│")[3].strip() for line in lines if line.count("│") == 4)
    assert " ".join(note.split()) == LONG_NOTE
    assert "…" not in screen.getvalue()


def test_a_terminal_too_narrow_for_the_ids_lets_lines_run_on_rather_than_cut_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    screen = _in_terminal(monkeypatch, 40)
    table = output.new_table("model", "note", wrap=("note",))
    table.add_row(MODEL, LONG_NOTE)
    output.print_table(table)
    assert any(MODEL in line for line in screen.getvalue().splitlines())
    assert "…" not in screen.getvalue()


def test_a_table_that_fits_the_terminal_is_printed_as_it_is(monkeypatch: pytest.MonkeyPatch) -> None:
    screen = _in_terminal(monkeypatch, 100)
    table = output.new_table("label", "version")
    table.add_row("prod", "3")
    output.print_table(table)
    assert screen.getvalue().splitlines()[3] == "│ prod  │ 3       │"


def test_two_text_columns_share_a_narrow_terminal_and_the_row_fits_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    screen = _in_terminal(monkeypatch, 80)
    table = output.new_table("id", "created", "source", "operations", wrap=("source", "operations"))
    source = "batch 1b2c3d4e-5f6a-4b7c-8d9e-0f1a2b3c4d5e, sample 12"
    table.add_row("p-3f9a1c2e7b", "2026-11-28 11:07", source, Text(f"ADD [units] {LONG_SKILL}"))
    output.print_table(table)
    lines = screen.getvalue().splitlines()
    assert {len(line) for line in lines} == {80}
    assert any("p-3f9a1c2e7b" in line for line in lines)
    operations = " ".join(line.split("│")[4].strip() for line in lines if line.count("│") == 5)
    assert " ".join(operations.split()) == f"ADD [units] {LONG_SKILL}"

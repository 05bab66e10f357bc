"""``skillbook evaluate`` and ``label promote --if-better`` redact the tasks as the skillbook's tenant says.

Real Redis, the CLI in this process, and an agent that answers what each question asks for
(tests/support/redaction.py's EchoingLLM), recording every prompt it is sent.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import redis

from ace_workers.cli.exit_codes import EXIT_DONE, EXIT_FAILURES, EXIT_REFUSED
from ace_workers.core import Skillbook
from ace_workers.distributed import RedisSkillbookStore
from ace_workers.distributed.tenancy import Tenant, TenantRegistry
from tests.support.cli import Ran, run_console_script
from tests.support.redaction import (
    ANSWER_WITH,
    API_KEY,
    AWS_KEY,
    ECHOING_FACTORY,
    EMAIL,
    FAILS,
    KNOWN_ANSWER,
    LEAKED_KEY,
    SEARCHED,
    RecordingLLM,
    found_in,
)
from tests.support.redis_scan import places_holding

PREFIX = "evalredact"

# The same key in the question, the context and the ground truth, after another key: redacted in
# one session it is <SECRET_2> in all three, so the agent's answer matches the ground truth.
SAME_KEY = {
    "question": f"Which key failed, {AWS_KEY} or {API_KEY}? {ANSWER_WITH}{API_KEY}",
    "context": f"billing log for {EMAIL}: auth failed for key {API_KEY}",
    "ground_truth": API_KEY,
}
# A ground truth the prompt does not hold: the agent knows the address from elsewhere, and its
# answer is redacted in the task's session, where the ground truth made it <EMAIL_2>.
KNOWN_ADDRESS = {
    "question": f"Who handles the refunds {EMAIL} asks about?",
    "ground_truth": KNOWN_ANSWER,
}


@pytest.fixture
def cli_settings() -> dict[str, str]:
    """``env`` under this module's prefix, every model the echoing simulator."""
    return {"ACE_QUEUE_PREFIX": PREFIX, "ACE_LLM_FACTORY": ECHOING_FACTORY}


@pytest.fixture(autouse=True)
def _no_prompts_yet() -> None:
    RecordingLLM.prompts.clear()


def skillbook(redis_client: redis.Redis, name: str) -> RedisSkillbookStore:
    """Skillbook ``name`` at version 1 (one skill), labelled prod, and at version 2 (two), labelled canary."""
    book = Skillbook()
    book.add_skill("general", "Read the question.")
    store = RedisSkillbookStore(redis_client, name, prefix=PREFIX)
    store.import_skillbook(book)
    book.add_skill("general", "Quote what is asked for.")
    store.import_skillbook(book, replace=True)
    store.labels.set("prod", 1, actor="user:ann")
    store.labels.set("canary", 2, actor="user:ann")
    return store


def task_file(path: Path, *tasks: dict[str, Any]) -> Path:
    path.write_text("".join(json.dumps(task) + "\n" for task in tasks))
    return path


@pytest.fixture
def cli(
    env: pytest.MonkeyPatch, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> Callable[..., Ran]:
    """The ``ace-workers`` console script with these arguments, in this process, under ``env``."""
    return lambda *args: run_console_script(monkeypatch, capsys, *args)


def evaluate(cli: Callable[..., Ran], book: str, tasks: Path) -> Ran:
    return cli("skillbook", "evaluate", book, "--version", "1", "--tasks", str(tasks), "--json")


def agent_prompts() -> list[str]:
    prompts = [prompt for prompt in RecordingLLM.prompts if prompt.startswith("# Agent\n")]
    assert prompts, "the echoing LLM saw no agent prompt"
    return prompts


def planted_places(client: redis.Redis) -> dict[str, list[str]]:
    """Each planted value (or the leaked key) that some key of the test Redis holds, and where."""
    return {value: found for value in (*SEARCHED, LEAKED_KEY) if (found := places_holding(client, value))}


def test_no_agent_prompt_sees_a_task_s_secrets_and_the_answers_still_score(
    redis_client: redis.Redis, tmp_path: Path, cli: Callable[..., Ran]
) -> None:
    skillbook(redis_client, "book")
    ran = evaluate(cli, "book", task_file(tmp_path / "t.jsonl", SAME_KEY, KNOWN_ADDRESS))

    assert ran.code == EXIT_DONE, ran.err
    prompts = agent_prompts()
    assert len(prompts) == 2
    assert [found_in(prompt) for prompt in prompts if found_in(prompt)] == []
    # The same key is the same placeholder in the question and the context; the other key is <SECRET_1>.
    assert f"## Question\nWhich key failed, <SECRET_1> or <SECRET_2>? {ANSWER_WITH}<SECRET_2>" in prompts[0]
    assert "## Context\nbilling log for <EMAIL_1>: auth failed for key <SECRET_2>" in prompts[0]
    # Placeholders are numbered per task: the second task's address is <EMAIL_1> again.
    assert "## Question\nWho handles the refunds <EMAIL_1> asks about?" in prompts[1]
    (result,) = json.loads(ran.out)["results"]
    assert (result["correct"], result["errors"]) == (2, 0)


def test_a_failed_call_s_error_is_stored_redacted_and_redis_holds_no_task_secret(
    redis_client: redis.Redis, tmp_path: Path, cli: Callable[..., Ran]
) -> None:
    store = skillbook(redis_client, "book")
    failing = {"question": f"Mail {EMAIL} the receipt. {FAILS}", "ground_truth": "sent"}
    ran = evaluate(cli, "book", task_file(tmp_path / "t.jsonl", SAME_KEY, failing))

    assert ran.code == EXIT_FAILURES
    (recorded,) = store.evaluations.recent()
    first_error = recorded["results"][0]["first_error"]
    # The error quotes the prompt, redacted, and a key the prompt never held, redacted as it is reported.
    assert f"provider refused 'Mail <EMAIL_1> the receipt. {FAILS}' for account <SECRET_1>" in first_error
    assert recorded["results"][0]["correct"] == 1
    assert planted_places(redis_client) == {}


def test_a_tenant_that_turns_redaction_off_is_evaluated_on_its_tasks_as_written(
    redis_client: redis.Redis, tmp_path: Path, cli: Callable[..., Ran]
) -> None:
    TenantRegistry(redis_client, prefix=PREFIX).add(Tenant("lab", skillbooks=("lab-book",), redact="off"))
    skillbook(redis_client, "lab-book")
    ran = evaluate(cli, "lab-book", task_file(tmp_path / "t.jsonl", SAME_KEY, KNOWN_ADDRESS))

    assert ran.code == EXIT_DONE, ran.err
    prompts = agent_prompts()
    assert f"## Question\n{SAME_KEY['question']}" in prompts[0]
    assert f"## Context\n{SAME_KEY['context']}" in prompts[0]
    (result,) = json.loads(ran.out)["results"]
    assert result["correct"] == 2


def test_a_task_file_holding_placeholders_gets_new_ones_numbered_after_them(
    redis_client: redis.Redis, tmp_path: Path, cli: Callable[..., Ran]
) -> None:
    skillbook(redis_client, "book")
    # As a task file made from redacted traces: <EMAIL_1> is someone else already.
    task = {"question": f"Did <EMAIL_1> write to {EMAIL}? {ANSWER_WITH}{EMAIL}", "ground_truth": EMAIL}
    ran = evaluate(cli, "book", task_file(tmp_path / "t.jsonl", task))

    assert ran.code == EXIT_DONE, ran.err
    (prompt,) = agent_prompts()
    assert f"## Question\nDid <EMAIL_1> write to <EMAIL_2>? {ANSWER_WITH}<EMAIL_2>" in prompt
    assert json.loads(ran.out)["results"][0]["correct"] == 1


def test_promote_if_better_evaluates_on_redacted_tasks(
    redis_client: redis.Redis, tmp_path: Path, cli: Callable[..., Ran]
) -> None:
    store = skillbook(redis_client, "book")
    tasks = task_file(tmp_path / "t.jsonl", SAME_KEY, KNOWN_ADDRESS)
    ran = cli(
        "skillbook", "label", "promote", "book", "canary", "--to", "prod",
        "--if-better", "--tasks", str(tasks), "--json",
    )  # fmt: skip

    assert ran.code == EXIT_REFUSED, ran.err  # both versions answer every task right: a tie
    prompts = agent_prompts()
    assert len(prompts) == 4  # two versions, two tasks
    assert [found_in(prompt) for prompt in prompts if found_in(prompt)] == []
    assert all("<SECRET_2>" in prompt or "<EMAIL_1>" in prompt for prompt in prompts)
    (recorded,) = store.evaluations.recent()
    assert [r["correct"] for r in recorded["results"]] == [2, 2]
    assert planted_places(redis_client) == {}

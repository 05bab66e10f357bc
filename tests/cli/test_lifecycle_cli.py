"""``skillbook pin|unpin|archive|restore|archived|prune``, as a user runs them, on the test Redis."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import redis
from typer.testing import CliRunner

from ace_workers.cli import app
from ace_workers.core import Skillbook
from ace_workers.distributed import RedisSkillbookStore
from ace_workers.distributed.service import build_service, local_workers
from ace_workers.distributed.settings import WorkerSettings
from ace_workers.distributed.store.changelog import ChangeKind
from ace_workers.distributed.store.review_policy import parse_policy
from tests.support.cli import said, write_traces
from tests.support.schema0 import stamp_current_schema

PREFIX = "clilife"
STALE = "Old rule nobody cites."


@pytest.fixture
def book(clean_env: pytest.MonkeyPatch, redis_client: redis.Redis, redis_url: str) -> RedisSkillbookStore:
    """Skillbook "book": two fresh skills and one untouched for 60 days; the CLI points at it."""
    clean_env.setenv("ACE_REDIS_URL", redis_url)
    clean_env.setenv("ACE_QUEUE_PREFIX", PREFIX)
    stamp_current_schema(redis_client, PREFIX)  # as this version's first process did
    skills = Skillbook()
    skills.add_skill("math", "Check units before adding.")
    skills.add_skill("math", "Estimate the answer first.")
    stale = skills.add_skill("math", STALE)
    skills._skills[stale.id].updated_at = (datetime.now(UTC) - timedelta(days=60)).isoformat()
    store = RedisSkillbookStore(redis_client, "book", prefix=PREFIX)
    store.import_skillbook(skills)
    return store


def invoke(*args: str) -> tuple[int, str, str]:
    ran = CliRunner().invoke(app, list(args))
    return ran.exit_code, ran.stdout, ran.stderr


def test_pin_archive_restore_say_what_they_did_and_record_the_actor_and_note(
    book: RedisSkillbookStore,
) -> None:
    code, out, _ = invoke("skillbook", "pin", "book", "math-00001", "--note", "core rule", "--actor", "ann")
    assert (code, out) == (0, "skillbook 'book' version 2: pinned math-00001\n")
    record = book.history(limit=1)[0]
    assert record.kind is ChangeKind.LIFECYCLE
    assert record.source == {
        "action": "pin",
        "actor": "user:ann",
        "note": "core rule",
        "skills": ["math-00001"],
    }
    code, out, _ = invoke("skillbook", "pin", "book", "math-00001")
    assert (code, out) == (
        0,
        "nothing changed (skillbook 'book' stays at version 2)\nalready pinned: math-00001\n",
    )
    code, out, _ = invoke("skillbook", "archive", "book", "math-00002", "--note", "superseded")
    assert (code, out) == (0, "skillbook 'book' version 3: archived math-00002\n")
    assert "Estimate" not in book.export().as_prompt()
    assert book.active_skills() == 2
    code, out, _ = invoke("skillbook", "restore", "book", "math-00002", "--json")
    assert code == 0
    restored = json.loads(out)
    assert restored.pop("actor").startswith("user:")  # the login name of whoever runs the tests
    assert restored == {
        "name": "book",
        "action": "restore",
        "version": 4,
        "changed": ["math-00002"],
        "unchanged": [],
        "skipped": {},
    }
    assert "Estimate" in book.export().as_prompt()


def test_archiving_a_pinned_skill_is_refused_and_naming_an_unknown_one_is_a_clear_usage_error(
    book: RedisSkillbookStore,
) -> None:
    assert invoke("skillbook", "pin", "book", "math-00001")[0] == 0
    code, _, err = invoke("skillbook", "archive", "book", "math-00002", "math-00001")
    assert code == 4  # refused: the pin stands (exit 4, as every conflict)
    assert (
        "skill 'math-00001' of skillbook 'book' is pinned, so it cannot be archived; unpin it first"
        in said(err)
    )
    assert book.version() == 2  # nothing of it applied
    code, _, err = invoke("skillbook", "unpin", "book", "math-00042")
    assert code == 2
    assert "no skill with id 'math-00042' in skillbook 'book'" in said(err)
    code, _, err = invoke("skillbook", "pin", "nobody", "math-00001")
    assert code == 2
    assert "no skillbook named 'nobody'" in said(err)
    code, _, err = invoke("skillbook", "pin", "book", "math-00001", "--actor", "bad actor")
    assert code == 2
    assert "actor 'user:bad actor' is not a valid name" in said(err)


def test_archived_lists_when_by_whom_and_why_in_text_and_json(book: RedisSkillbookStore) -> None:
    code, out, _ = invoke("skillbook", "archived", "book")
    assert (code, out) == (0, "skillbook 'book' has no archived skills\n")
    invoke("skillbook", "archive", "book", "math-00002", "--note", "superseded", "--actor", "key:ci")
    code, out, _ = invoke("skillbook", "archived", "book")
    assert code == 0
    row = next(line for line in out.splitlines() if "math-00002" in line)
    assert "key:ci" in row
    assert "superseded" in row
    code, out, _ = invoke("skillbook", "archived", "book", "--json")
    (listed,) = json.loads(out)
    assert (listed["id"], listed["content"]) == ("math-00002", "Estimate the answer first.")
    assert (listed["archive_info"]["by"], listed["archive_info"]["reason"]) == ("key:ci", "superseded")


def test_prune_dry_run_lists_with_why_and_apply_archives_them_in_one_version(
    book: RedisSkillbookStore,
) -> None:
    code, out, _ = invoke("skillbook", "prune", "book", "--dry-run")
    assert code == 0
    assert out == (
        f"math-00003 [math] {STALE}: not tagged or updated for 60 days\n"
        "1 stale skill in skillbook 'book' at version 1; nothing changed (--apply archives them)\n"
    )
    assert book.version() == 1
    code, out, _ = invoke("skillbook", "prune", "book", "--dry-run", "--days", "90", "--json")
    assert json.loads(out) == {
        "name": "book",
        "dry_run": True,
        "version": 1,
        "rule": {"days": 90.0},
        "candidates": [],
    }
    code, out, _ = invoke("skillbook", "prune", "book", "--apply", "--note", "spring clean", "--json")
    assert code == 0
    applied = json.loads(out)
    assert (applied["version"], applied["archived"], applied["skipped"]) == (2, ["math-00003"], {})
    assert [c["id"] for c in applied["candidates"]] == ["math-00003"]
    assert [s.id for s in book.archived()] == ["math-00003"]
    code, out, _ = invoke("skillbook", "prune", "book", "--apply")
    assert (code, out) == (0, "nothing archived (skillbook 'book' stays at version 2)\n")


def test_prune_needs_exactly_one_of_dry_run_and_apply(book: RedisSkillbookStore) -> None:
    for flags in ((), ("--dry-run", "--apply")):
        code, _, err = invoke("skillbook", "prune", "book", *flags)
        assert code == 2
        assert "give exactly one of --dry-run (list) and --apply (archive)" in said(err)


MIRP = [
    "For mirp questions, sum the digits of the input.",
    "When a mirp question comes, sum the digits of the number you are given.",
]


def test_skillbook_dedup_leaves_a_pinned_near_duplicate_unmerged(
    clean_env: pytest.MonkeyPatch, redis_client: redis.Redis, redis_url: str
) -> None:
    clean_env.setenv("ACE_REDIS_URL", redis_url)
    clean_env.setenv("HF_HUB_OFFLINE", "1")
    skills = Skillbook()
    for content in MIRP:
        skills.add_skill("mirp", content)
    store = RedisSkillbookStore(redis_client, "tenant")
    store.import_skillbook(skills)
    stamp_current_schema(redis_client, "ace")  # as this version's first process did
    assert invoke("skillbook", "pin", "tenant", "mirp-00002")[0] == 0
    code, out, _ = invoke("skillbook", "dedup", "tenant")
    assert code == 0, out
    assert "0 operations planned; nothing changed" in out
    assert len(store.export()) == 2
    # Unpinned, the same run merges the two statements of one rule (the simulated SkillManager).
    assert invoke("skillbook", "unpin", "tenant", "mirp-00002")[0] == 0
    code, out, _ = invoke("skillbook", "dedup", "tenant")
    assert code == 0, out
    assert "1 merged into 1" in out
    assert [s.id for s in store.export().skills()] == ["mirp-00001"]


def test_skillbook_dedup_under_review_names_the_proposal_it_made(
    clean_env: pytest.MonkeyPatch, redis_client: redis.Redis, redis_url: str
) -> None:
    clean_env.setenv("ACE_REDIS_URL", redis_url)
    clean_env.setenv("HF_HUB_OFFLINE", "1")
    skills = Skillbook()
    for content in MIRP:
        skills.add_skill("mirp", content)
    store = RedisSkillbookStore(redis_client, "reviewed")
    store.import_skillbook(skills)
    stamp_current_schema(redis_client, "ace")  # as this version's first process did
    store.review.set_policy(parse_policy("CONSOLIDATE=review"), actor="user:lead")
    code, out, _ = invoke("skillbook", "dedup", "reviewed")
    assert code == 0, out
    (proposal,) = store.review.proposals()
    assert f"the consolidation waits for review as proposal {proposal.id}" in said(out)
    assert len(store.export()) == 2
    store.review.approve(proposal.id, actor="user:lead")
    assert [s.id for s in store.export().skills()] == ["mirp-00001"]


def test_prune_by_batches_sees_what_a_batch_learned_on_real_workers(
    book: RedisSkillbookStore, redis_url: str, tmp_path: Path
) -> None:
    traces = write_traces(tmp_path / "traces.jsonl", 6)
    service = build_service(WorkerSettings.from_env(), redis_url=redis_url)
    try:
        with local_workers(service, learn_threads=2):
            code, out, err = invoke("learn", str(traces), "--skillbook", "book", "--model", "sim")
    finally:
        service.close()
    assert code == 0, out + err
    learned = [s.id for s in book.export().skills() if s.section != "math"]
    assert learned  # the batch added rules, each touched by it
    code, out, _ = invoke("skillbook", "prune", "book", "--dry-run", "--batches", "1", "--json")
    assert code == 0
    plan = json.loads(out)
    # The three skills imported before the batch were never cited, so never tagged, by it.
    assert [c["id"] for c in plan["candidates"]] == ["math-00001", "math-00002", "math-00003"]
    assert plan["batches_seen"] == 1
    assert plan["candidates"][0]["reason"] == "not tagged or updated by the last 1 batches"

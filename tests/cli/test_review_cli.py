"""``ace-workers skillbook review``: the policy, list, show, approve and reject, as text and as JSON."""

from __future__ import annotations

import json

import pytest
import redis

from ace_workers.core import UpdateBatch, UpdateOperation
from ace_workers.distributed import RedisSkillbookStore
from ace_workers.distributed.store import StoreBackedSkillbook, WriteScope, write_scope
from ace_workers.distributed.store.changelog import ChangeKind
from ace_workers.distributed.store.proposals import ProposalStatus
from ace_workers.distributed.store.review_policy import ReviewPolicy
from tests.support.cli import run_console_script, said

PREFIX = "clireview"


@pytest.fixture
def cli_settings() -> dict[str, str]:
    """``env`` (tests/support/cli_env.py) under this module's prefix."""
    return {"ACE_QUEUE_PREFIX": PREFIX}


@pytest.fixture
def store(redis_client: redis.Redis) -> RedisSkillbookStore:
    """Skillbook "book" under review, with one skill and two proposals (an UPDATE of it, an ADD)."""
    store = RedisSkillbookStore(redis_client, "book", prefix=PREFIX)
    (rule,) = store.apply(
        UpdateBatch(operations=[UpdateOperation(type="ADD", section="math", content="Carry the one")])
    ).report.added
    store.review.set_policy(ReviewPolicy.everything("review"), actor="user:lead")
    book = StoreBackedSkillbook(store)
    for sample, op in enumerate(
        [
            UpdateOperation(type="UPDATE", skill_id=rule, content="Carry the one, always"),
            UpdateOperation(type="ADD", section="units", content="Check the units"),
        ],
        start=1,
    ):
        scope = WriteScope(key_prefix=f"b1:e1s{sample}:3", source={"batch": "b1", "sample": sample})
        with write_scope(scope):
            book.apply_update(UpdateBatch(reasoning=f"lesson {sample}", operations=[op]))
    return store


def run(env: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    ran = run_console_script(env, capsys, "skillbook", "review", *args)
    return ran.code, ran.out, ran.err


def test_list_shows_the_pending_proposals_as_text_and_json(
    env: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], store: RedisSkillbookStore
) -> None:
    update, add = store.review.proposals()
    code, out, _ = run(env, capsys, "list", "book")
    assert code == 0
    assert "2 pending proposals" in out
    assert update.id in out and add.id in out
    assert "ADD [units] Check the units" in said(out)
    code, out, _ = run(env, capsys, "list", "book", "--json")
    listed = json.loads(out)
    assert listed["pending"] == 2
    assert [p["id"] for p in listed["proposals"]] == [update.id, add.id]
    assert listed["proposals"][1]["operations"][0]["content"] == "Check the units"
    assert listed["proposals"][1]["source"] == {"batch": "b1", "sample": 2}


def test_list_picks_a_sections_proposals_and_prints_only_ids_when_quiet(
    env: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], store: RedisSkillbookStore
) -> None:
    update, add = store.review.proposals()
    code, out, _ = run(env, capsys, "list", "book", "--quiet")
    assert (code, out.splitlines()) == (0, [update.id, add.id])
    code, out, _ = run(env, capsys, "list", "book", "--section", "units", "-q")
    assert (code, out.splitlines()) == (0, [add.id])
    # The UPDATE names math's skill by its id: it is of section math.
    code, out, _ = run(env, capsys, "list", "book", "--section", "math", "--limit", "1", "-q")
    assert (code, out.splitlines()) == (0, [update.id])
    code, out, _ = run(env, capsys, "list", "book", "--section", "nothing", "-q")
    assert (code, out) == (0, "")


def test_approve_applies_with_the_actor_and_note_and_a_second_approval_is_refused(
    env: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], store: RedisSkillbookStore
) -> None:
    _, add = store.review.proposals()
    before = store.version()
    code, out, _ = run(env, capsys, "approve", "book", add.id, "--note", "units matter", "--actor", "ana")
    assert code == 0
    assert f"proposal {add.id} approved by user:ana" in out
    assert f"now version {before + 1}" in out
    assert "Check the units" in {s.content for s in store.export().skills()}
    (entry,) = store.history(limit=1)
    assert entry.kind is ChangeKind.REVIEW
    assert entry.source is not None
    assert (entry.source["review"]["actor"], entry.source["review"]["note"]) == ("user:ana", "units matter")
    code, _, err = run(env, capsys, "approve", "book", add.id)
    assert code == 4  # refused: decided already (exit 4, as every conflict)
    assert f"proposal {add.id!r} was approved already, by user:ana" in said(err)
    assert store.version() == before + 1


def test_reject_as_json_leaves_the_skills_as_they_were(
    env: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], store: RedisSkillbookStore
) -> None:
    update, _ = store.review.proposals()
    skills = store.export().to_dict()["skills"]
    code, out, _ = run(env, capsys, "reject", "book", update.id, "--note", "too strong", "--json")
    assert code == 0
    decided = json.loads(out)
    assert (decided["id"], decided["status"]) == (update.id, "rejected")
    assert (decided["decision"]["note"], decided["decision"]["actor"]) == (
        "too strong",
        decided["decision"]["actor"],
    )
    assert decided["decision"]["actor"].startswith("user:")
    assert store.export().to_dict()["skills"] == skills
    assert store.review.get(update.id).status is ProposalStatus.REJECTED


def test_a_conflicting_proposal_is_refused_and_applies_with_despite_conflicts(
    env: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], store: RedisSkillbookStore
) -> None:
    update, _ = store.review.proposals()
    (rule,) = update.base_images
    store.apply(UpdateBatch(operations=[UpdateOperation(type="UPDATE", skill_id=rule, content="Carry tens")]))
    code, out, err = run(env, capsys, "show", "book", update.id)
    assert code == 0
    assert "Carry the one, always" in out
    assert f"{rule} when proposed: [math] Carry the one" in out
    assert f"conflicts: {rule} changed since it was proposed" in said(err)
    code, out, _ = run(env, capsys, "show", "book", update.id, "--json")
    assert json.loads(out)["conflicts"] == [rule]
    code, _, err = run(env, capsys, "approve", "book", update.id)
    assert code == 4  # refused: a conflict (exit 4)
    assert f"conflicts: skill {rule} changed since it was proposed" in said(err)
    assert store.export().get_skill(rule).content == "Carry tens"  # type: ignore[union-attr]
    code, _, _ = run(env, capsys, "approve", "book", update.id, "--despite-conflicts")
    assert code == 0
    assert store.export().get_skill(rule).content == "Carry the one, always"  # type: ignore[union-attr]


def test_an_unknown_proposal_is_a_usage_error_naming_it(
    env: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], store: RedisSkillbookStore
) -> None:
    code, _, err = run(env, capsys, "approve", "book", "p-nothere")
    assert code == 2
    assert "skillbook 'book' has no proposal 'p-nothere'" in said(err)


def test_policy_is_shown_set_and_refused_when_not_understood(
    env: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], redis_client: redis.Redis
) -> None:
    code, out, _ = run(env, capsys, "policy", "fresh")
    assert (code, out.strip()) == (0, "skillbook 'fresh': review policy auto")
    code, out, _ = run(env, capsys, "policy", "fresh", "TAG=auto,ADD=review", "--auto-approve-after", "3")
    assert code == 0
    assert "ADD=review,UPDATE=auto,TAG=auto" in out
    assert "auto-approve after 3" in out
    store = RedisSkillbookStore(redis_client, "fresh", prefix=PREFIX)
    assert store.review.policy().ADD == "review"
    assert store.review.policy().auto_approve_after == 3
    code, out, _ = run(env, capsys, "policy", "fresh", "--json")
    shown = json.loads(out)
    assert (shown["policy"]["ADD"], shown["policy"]["TAG"]) == ("review", "auto")
    code, _, err = run(env, capsys, "policy", "fresh", "ADD=sometimes")
    assert code == 2
    assert "ADD=sometimes" in said(err)
    assert store.review.policy().ADD == "review"


def test_skillbook_show_mentions_the_pending_proposals(
    env: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], store: RedisSkillbookStore
) -> None:
    ran = run_console_script(env, capsys, "skillbook", "show", "book")
    assert ran.code == 0
    assert "2 proposals wait for review: ace-workers skillbook review list book" in said(ran.err)
    ran = run_console_script(env, capsys, "skillbook", "show", "book", "--json")
    assert json.loads(ran.out)["pending_proposals"] == 2


def test_skillbook_history_lists_the_decisions(
    env: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], store: RedisSkillbookStore
) -> None:
    update, add = store.review.proposals()
    store.review.approve(add.id, actor="user:ana", note="units matter")
    store.review.reject(update.id, actor="user:ana")
    ran = run_console_script(env, capsys, "skillbook", "history", "book", "--limit", "2")
    assert ran.code == 0
    assert "(review)" in ran.out  # the rejection applied no operation
    assert "ADD units" in ran.out
    ran = run_console_script(env, capsys, "skillbook", "history", "book", "--limit", "2", "--json")
    rejected, approved = json.loads(ran.out)
    assert (rejected["kind"], rejected["source"]["review"]["decision"]) == ("review", "rejected")
    assert (approved["source"]["review"]["actor"], approved["source"]["review"]["note"]) == (
        "user:ana",
        "units matter",
    )


def test_approve_and_reject_take_several_ids_and_each_decision_is_logged(
    env: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], store: RedisSkillbookStore
) -> None:
    update, add = store.review.proposals()
    before = store.version()
    code, out, _ = run(env, capsys, "reject", "book", update.id, add.id, "--note", "not now")
    assert code == 0
    assert f"proposal {update.id} rejected by user:" in out
    assert f"proposal {add.id} rejected by user:" in out
    assert store.version() == before + 2  # one decision, one version each
    logged = [entry.source["review"] for entry in store.history(limit=2) if entry.source]
    assert [(r["proposal"], r["decision"], r["note"]) for r in logged] == [
        (add.id, "rejected", "not now"),
        (update.id, "rejected", "not now"),
    ]


def test_one_refused_id_of_several_is_named_the_rest_decided_and_the_exit_is_its_code(
    env: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], store: RedisSkillbookStore
) -> None:
    update, add = store.review.proposals()
    store.review.reject(update.id, actor="user:ana")
    code, out, err = run(env, capsys, "approve", "book", update.id, add.id)
    assert code == 4  # the refusal's code: decided already
    assert f"error: skillbook 'book': proposal {update.id!r} was rejected already, by user:ana" in said(err)
    assert f"proposal {add.id} approved by user:" in out
    assert store.review.get(add.id).status is ProposalStatus.APPROVED


def test_approve_all_with_filters_decides_only_the_proposals_they_pick(
    env: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], store: RedisSkillbookStore
) -> None:
    update, add = store.review.proposals()
    code, out, _ = run(env, capsys, "approve", "book", "--all", "--op", "add")
    assert code == 0
    assert f"proposal {add.id} approved" in out
    assert update.id not in out
    assert store.review.get(update.id).status is ProposalStatus.PENDING
    code, out, _ = run(env, capsys, "reject", "book", "--all", "--section", "units")
    assert (code, out.strip()) == (0, "skillbook 'book': no pending proposal matches; nothing decided")
    code, out, _ = run(env, capsys, "reject", "book", "--all")
    assert code == 0
    assert store.review.pending_count() == 0


@pytest.mark.parametrize(
    ("args", "named"),
    [
        ((), "give one or more proposal ids, or --all"),
        (("p-1", "--all"), "give proposal ids or --all, not both"),
        (("p-1", "--op", "ADD"), "--section, --op and --duplicates narrow --all"),
        (("--all", "--op", "MERGE"), "'MERGE': use one of ADD"),
    ],
)
def test_a_decision_naming_no_proposal_or_mixing_ids_and_all_is_a_usage_error(
    env: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    store: RedisSkillbookStore,
    args: tuple[str, ...],
    named: str,
) -> None:
    code, _, err = run(env, capsys, "approve", "book", *args)
    assert code == 2
    assert named in said(err)
    assert store.review.pending_count() == 2


def test_a_duplicate_is_listed_as_such_and_approving_it_says_nothing_changed_without_a_version(
    env: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], store: RedisSkillbookStore
) -> None:
    update, add = store.review.proposals()
    (units,) = store.apply(
        UpdateBatch(operations=[UpdateOperation(type="ADD", section="units", content="Check the units")])
    ).report.added
    code, out, _ = run(env, capsys, "list", "book")
    assert code == 0
    assert f"duplicate of {units}" in said(out)
    code, out, _ = run(env, capsys, "list", "book", "--duplicates", "-q")
    assert (code, out.splitlines()) == (0, [add.id])
    code, out, _ = run(env, capsys, "show", "book", add.id)
    assert code == 0
    assert f"duplicate of {units}: approving it changes nothing" in out
    before = store.version()
    code, out, _ = run(env, capsys, "approve", "book", "--all", "--duplicates")
    assert code == 0
    assert f"proposal {add.id} approved by user:" in out
    assert (
        f": nothing changed (it restates {units}); skillbook 'book' keeps its version (no new version)"
        in said(out)
    )
    assert store.version() == before
    assert store.review.get(update.id).status is ProposalStatus.PENDING


def test_list_counts_the_writes_merged_into_a_proposal(
    env: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], store: RedisSkillbookStore
) -> None:
    book = StoreBackedSkillbook(store)
    scope = WriteScope(key_prefix="b2:e1s7:3", source={"batch": "b2", "sample": 7})
    with write_scope(scope):
        book.apply_update(
            UpdateBatch(operations=[UpdateOperation(type="ADD", section="units", content="Check the units")])
        )
    _, add = store.review.proposals()
    code, out, _ = run(env, capsys, "list", "book", "--json")
    assert code == 0
    listed = {p["id"]: p for p in json.loads(out)["proposals"]}
    assert listed[add.id]["count"] == 2
    assert [o["source"] for o in listed[add.id]["occurrences"]] == [
        {"batch": "b1", "sample": 2},
        {"batch": "b2", "sample": 7},
    ]
    code, out, _ = run(env, capsys, "show", "book", add.id)
    assert code == 0
    assert "proposed by 2 writes" in out
    assert "batch b2, sample 7" in out


def test_a_policy_rejecting_duplicates_is_set_and_shown(
    env: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], redis_client: redis.Redis
) -> None:
    code, out, _ = run(env, capsys, "policy", "fresh", "ADD=review", "--duplicates", "reject")
    assert code == 0
    assert "duplicates of active skills rejected" in out
    store = RedisSkillbookStore(redis_client, "fresh", prefix=PREFIX)
    assert store.review.policy().duplicates == "reject"
    code, _, err = run(env, capsys, "policy", "fresh", "ADD=review", "--duplicates", "drop")
    assert code == 2
    assert "'drop': use review or reject" in said(err)

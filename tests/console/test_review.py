"""The review pages and actions: the queue as the store has it, approve, reject, conflicts, refusals."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import parse_qs, urlparse

import pytest

from ace_workers.console.audit import read_audit
from ace_workers.console.notices import NOTICES
from ace_workers.core import UpdateBatch, UpdateOperation
from ace_workers.core.consolidation import ConsolidationBatch, MergeOp
from ace_workers.distributed.service import Service
from ace_workers.distributed.store.changelog import ChangeKind
from ace_workers.distributed.store.proposals import Proposal, ProposalStatus
from ace_workers.distributed.store.review_policy import ReviewPolicy
from ace_workers.sim import failure_traces
from tests.support.cdp import headless_chromium
from tests.support.console import (
    SCREENSHOTS,
    RunningConsole,
    api_post,
    csrf_of,
    post_form,
    running_console,
)

STEERED = "steered"  # learned under review: three ADD proposals, nothing applied
LEARNED = "support"  # the fleet fixture's skillbook: its skills exist, so a proposal can conflict


@pytest.fixture
def proposed(fleet: Service) -> Service:
    """The fleet, with skillbook ``steered`` set to review everything and a batch of three traces learned."""
    store = fleet.runtime.store(STEERED)
    store.review.set_policy(ReviewPolicy.everything("review"), actor="user:lead")
    status = fleet.producer.enqueue_traces(failure_traces(3, topics=3), STEERED).wait(timeout=60)
    assert (status.done, status.failed) == (3, 0)
    return fleet


def pending(service: Service, name: str = STEERED) -> list[Proposal]:
    return service.runtime.store(name).review.proposals()


def added_contents(service: Service, name: str = STEERED) -> set[str]:
    return {skill.content for skill in service.runtime.store(name).export().skills()}


def conflicting_proposal(service: Service) -> tuple[Proposal, str]:
    """A TAG proposal on one of ``support``'s skills, whose text a person rewrote since: a conflict."""
    store = service.runtime.store(LEARNED)
    store.review.set_policy(ReviewPolicy.everything("review"), actor="user:lead")
    status = service.producer.enqueue_traces(failure_traces(1, topics=1), LEARNED).wait(timeout=60)
    assert (status.done, status.failed) == (1, 0)
    (proposal,) = store.review.proposals()
    (skill_id,) = proposal.touched()
    rewrite = UpdateOperation(type="UPDATE", skill_id=skill_id, content="Rewritten by a person")
    store.apply(UpdateBatch(operations=[rewrite]))
    return proposal, skill_id


# -- the queue -------------------------------------------------------------------------------------


def test_the_queue_lists_the_pending_proposals_as_the_store_has_them(
    proposed: Service, console: RunningConsole
) -> None:
    with console.client() as client:
        queue = client.get(f"/api/skillbooks/{STEERED}/review").json()
    stored = pending(proposed)
    assert [p["id"] for p in queue["proposals"]] == [p.id for p in stored]
    assert [p["operations"] for p in queue["proposals"]] == [p.operations for p in stored]
    assert queue["pending"] == len(stored) == 3
    assert queue["policy"]["describe"] == "review"
    assert queue["policy"]["modes"]["ADD"] == "review"


def test_each_proposal_carries_its_evidence_batch_link_and_kinds(
    proposed: Service, console: RunningConsole
) -> None:
    with console.client() as client:
        first = client.get(f"/api/skillbooks/{STEERED}/review").json()["proposals"][0]
    stored = pending(proposed)[0]
    assert first["operation_types"] == ["ADD"]
    assert first["evidence"][0]["insight"] == stored.insight_sources[0]["insight"]
    assert first["batch_url"] == f"/batches/{stored.source['batch']}"
    assert first["evidence"][0]["batch_url"] == f"/batches/{stored.insight_sources[0]['batch_id']}"
    assert first["described"][0]["text"] == stored.operations[0]["content"]
    assert first["conflicts"] == []
    assert first["url"] == f"/skillbooks/{STEERED}/review/{stored.id}"


def test_a_dedup_consolidation_shows_the_skills_it_merges_and_the_merged_text(
    fleet: Service, console: RunningConsole
) -> None:
    store = fleet.runtime.store(LEARNED)
    keep, merged = (skill.id for skill in store.export().skills()[:2])
    merge = MergeOp(keep_id=keep, merge_ids=[merged], merged_content="One rule for both")
    store.review.propose_consolidation(ConsolidationBatch(operations=[merge]), idempotency_key="dedup-1")
    with console.client() as client:
        (proposal,) = client.get(f"/api/skillbooks/{LEARNED}/review").json()["proposals"]
        page = client.get(proposal["url"]).text
    assert "One rule for both" in page
    assert (proposal["kind"], proposal["operation_types"]) == ("consolidate", ["MERGE"])
    assert [skill["id"] for skill in proposal["described"][0]["skills"]] == [keep, merged]
    assert proposal["described"][0]["text"] == "One rule for both"
    assert proposal["described"][0]["skills"][0]["url"] == f"/skillbooks/{LEARNED}/skills/{keep}"


def test_the_queue_pages_and_picks_a_section(proposed: Service, console: RunningConsole) -> None:
    stored = pending(proposed)
    section = stored[2].operations[0]["section"]
    with console.client() as client:
        first = client.get(f"/api/skillbooks/{STEERED}/review", params={"per_page": 2}).json()
        second = client.get(f"/api/skillbooks/{STEERED}/review", params={"per_page": 2, "page": 2}).json()
        picked = client.get(f"/api/skillbooks/{STEERED}/review", params={"section": section}).json()
        everything = client.get(f"/api/skillbooks/{STEERED}/review", params={"status": "all"}).json()
    assert [p["id"] for p in first["proposals"]] == [stored[0].id, stored[1].id]
    assert (first["pages"], first["total"]) == (2, 3)
    assert [p["id"] for p in second["proposals"]] == [stored[2].id]
    assert [p["id"] for p in picked["proposals"]] == [stored[2].id]
    assert len(everything["proposals"]) == 3


def test_a_bad_status_or_page_is_a_400_naming_the_parameter(
    proposed: Service, console: RunningConsole
) -> None:
    with console.client() as client:
        status = client.get(f"/api/skillbooks/{STEERED}/review", params={"status": "maybe"})
        page = client.get(f"/api/skillbooks/{STEERED}/review", params={"page": "0"})
    assert status.status_code == 400
    assert "status='maybe'" in status.json()["message"]
    assert page.status_code == 400
    assert "page=0" in page.json()["message"]


def test_the_queue_page_shows_the_policy_and_each_proposal(
    proposed: Service, console: RunningConsole
) -> None:
    with console.client() as client:
        html = client.get(f"/skillbooks/{STEERED}/review").text
    for proposal in pending(proposed):
        assert f'data-proposal="{proposal.id}"' in html
        assert proposal.operations[0]["content"] in html
    assert '<span id="policy-describe">review</span>' in html


# -- deciding ----------------------------------------------------------------------------------------


def test_approving_through_the_api_applies_it_and_the_change_log_names_the_user(
    proposed: Service, console: RunningConsole
) -> None:
    store = proposed.runtime.store(STEERED)
    proposal = pending(proposed)[0]
    before = store.version()
    with console.client() as client:
        response = api_post(
            client, f"/api/skillbooks/{STEERED}/review/{proposal.id}/approve", {"note": "looks right"}
        )
    assert response.status_code == 200, response.text
    assert response.json()["version"] == before + 1
    assert proposal.operations[0]["content"] in added_contents(proposed)
    (entry,) = store.history(limit=1)
    assert entry.kind is ChangeKind.REVIEW
    assert entry.source is not None
    assert (entry.source["review"]["actor"], entry.source["review"]["note"]) == (
        console.ops.name,
        "looks right",
    )
    assert store.review.get(proposal.id).status is ProposalStatus.APPROVED


def test_an_approval_is_written_to_the_audit_log(proposed: Service, console: RunningConsole) -> None:
    proposal = pending(proposed)[0]
    with console.client() as client:
        api_post(client, f"/api/skillbooks/{STEERED}/review/{proposal.id}/approve", {})
    (entry,) = read_audit(proposed.runtime.redis, proposed.runtime.settings.queue_prefix)
    assert (entry.user, entry.action, entry.target, entry.outcome) == (
        console.ops.name,
        "review:approve",
        f"{STEERED}/{proposal.id}",
        "ok",
    )


def test_rejecting_marks_it_rejected_and_applies_nothing(proposed: Service, console: RunningConsole) -> None:
    proposal = pending(proposed)[1]
    with console.client() as client:
        response = api_post(
            client, f"/api/skillbooks/{STEERED}/review/{proposal.id}/reject", {"note": "not general"}
        )
        rejected = client.get(f"/api/skillbooks/{STEERED}/review", params={"status": "rejected"}).json()
    assert response.status_code == 200, response.text
    decided = proposed.runtime.store(STEERED).review.get(proposal.id)
    assert decided.status is ProposalStatus.REJECTED
    assert decided.decision is not None and decided.decision.note == "not general"
    assert proposed.runtime.store(STEERED).active_skills() == 0
    assert [p["id"] for p in rejected["proposals"]] == [proposal.id]


def test_a_form_approval_goes_back_to_the_queue_with_the_approved_notice(
    proposed: Service, console: RunningConsole
) -> None:
    proposal = pending(proposed)[0]
    with console.client() as client:
        response = post_form(client, f"/skillbooks/{STEERED}/review/{proposal.id}/approve", {"note": "ok"})
    assert response.status_code == 303
    location = urlparse(response.headers["location"])
    assert location.path == f"/skillbooks/{STEERED}/review"
    # A code, not text: the page shows NOTICES' text for it (console/notices.py).
    assert parse_qs(location.query)["notice"] == ["proposal-approved"]


def test_a_conflicting_proposal_is_refused_with_409_naming_the_skill_unless_despite_conflicts(
    fleet: Service, console: RunningConsole
) -> None:
    proposal, skill_id = conflicting_proposal(fleet)
    path = f"/api/skillbooks/{LEARNED}/review/{proposal.id}/approve"
    with console.client() as client:
        queue = client.get(f"/api/skillbooks/{LEARNED}/review").json()
        refused = api_post(client, path, {"note": "try"})
        approved = api_post(client, path, {"note": "anyway", "despite_conflicts": True})
    assert queue["proposals"][0]["conflicts"] == [skill_id]
    assert refused.status_code == 409
    assert f"conflicts: skill {skill_id} changed since it was proposed" in refused.json()["message"]
    assert approved.status_code == 200, approved.text
    assert approved.json()["despite_conflicts"] == skill_id
    decided = fleet.runtime.store(LEARNED).review.get(proposal.id)
    assert decided.decision is not None and decided.decision.despite_conflicts == [skill_id]


def test_the_proposal_page_shows_its_conflicts_and_the_despite_checkbox(
    fleet: Service, console: RunningConsole
) -> None:
    proposal, skill_id = conflicting_proposal(fleet)
    with console.client() as client:
        data = client.get(f"/api/skillbooks/{LEARNED}/review/{proposal.id}").json()
        html = client.get(f"/skillbooks/{LEARNED}/review/{proposal.id}").text
    assert data["proposal"]["conflicts"] == [skill_id]
    assert data["proposal"]["current_images"][skill_id]["content"] == "Rewritten by a person"
    assert data["proposal"]["base_images"][skill_id]["content"] != "Rewritten by a person"
    assert f'data-conflict="{skill_id}"' in html
    assert 'id="despite-conflicts"' in html


def test_a_decided_proposal_is_refused_with_409_naming_who_decided(
    proposed: Service, console: RunningConsole
) -> None:
    proposal = pending(proposed)[0]
    with console.client() as client:
        api_post(client, f"/api/skillbooks/{STEERED}/review/{proposal.id}/reject", {})
        again = api_post(client, f"/api/skillbooks/{STEERED}/review/{proposal.id}/approve", {})
        page = client.get(f"/skillbooks/{STEERED}/review/{proposal.id}").text
    assert again.status_code == 409
    assert f"was rejected already, by {console.ops.name}" in again.json()["message"]
    assert 'id="approve-form"' not in page


def test_an_unknown_proposal_or_skillbook_is_a_404_naming_it(
    proposed: Service, console: RunningConsole
) -> None:
    with console.client() as client:
        shown = client.get(f"/api/skillbooks/{STEERED}/review/p-nothere")
        approved = api_post(client, f"/api/skillbooks/{STEERED}/review/p-nothere/approve", {})
        book = client.get("/api/skillbooks/nobook/review")
    assert shown.status_code == approved.status_code == book.status_code == 404
    assert "has no proposal 'p-nothere'" in shown.json()["message"]
    assert "has no proposal 'p-nothere'" in approved.json()["message"]
    assert "no skillbook named 'nobook'" in book.json()["message"]  # as every front end says it


def test_a_despite_conflicts_that_is_no_yes_or_no_is_a_400_naming_it(
    proposed: Service, console: RunningConsole
) -> None:
    proposal = pending(proposed)[0]
    with console.client() as client:
        response = api_post(
            client,
            f"/api/skillbooks/{STEERED}/review/{proposal.id}/approve",
            {"despite_conflicts": "perhaps"},
        )
    assert response.status_code == 400
    assert "despite_conflicts='perhaps'" in response.json()["message"]
    assert proposed.runtime.store(STEERED).review.get(proposal.id).status is ProposalStatus.PENDING


def test_a_refusal_is_answered_whole_with_the_security_headers(
    proposed: Service, console: RunningConsole
) -> None:
    with console.client() as client:
        for path in (
            f"/api/skillbooks/{STEERED}/review/p-nothere",
            f"/skillbooks/{STEERED}/review/p-nothere",
        ):
            response = client.get(path)
            assert response.status_code == 404, path
            assert response.headers["x-frame-options"] == "DENY", path


def test_a_read_only_console_shows_a_proposal_without_the_forms(proposed: Service) -> None:
    proposal = pending(proposed)[0]
    with running_console(proposed, read_only=True) as running, running.client() as client:
        html = client.get(f"/skillbooks/{STEERED}/review/{proposal.id}").text
    assert proposal.operations[0]["content"] in html
    assert 'id="approve-form"' not in html
    assert "read-only: it decides nothing" in html


# -- echoes: merged proposals, duplicates, several at once -------------------------------------------


def restate(service: Service, proposal: Proposal, name: str = STEERED) -> str:
    """A person adds the skill ``proposal`` proposes: the proposal restates it now. Its id."""
    op = proposal.operations[0]
    add = UpdateOperation(type="ADD", section=op["section"], content=op["content"])
    (skill_id,) = service.runtime.store(name).apply(UpdateBatch(operations=[add])).report.added
    return skill_id


def test_a_restating_proposal_is_shown_as_a_duplicate_of_the_skill_not_as_conflicting_with_none(
    proposed: Service, console: RunningConsole
) -> None:
    first, second, _ = pending(proposed)
    skill_id = restate(proposed, first)
    with console.client() as client:
        queue = client.get(f"/api/skillbooks/{STEERED}/review").json()
        html = client.get(f"/skillbooks/{STEERED}/review").text
        picked = client.get(f"/api/skillbooks/{STEERED}/review", params={"duplicates": "true"}).json()
        page = client.get(f"/skillbooks/{STEERED}/review/{first.id}").text
    shown = {p["id"]: p for p in queue["proposals"]}
    assert shown[first.id]["duplicate_of"] == [skill_id]
    assert shown[second.id]["duplicate_of"] == []
    assert shown[first.id]["count"] == 1
    row = html.split(f'data-proposal="{first.id}"', 1)[1].split("</tr>", 1)[0]
    assert "duplicate of" in row and f">{skill_id}</a>" in row
    assert ">none<" not in row
    assert [p["id"] for p in picked["proposals"]] == [first.id]
    assert "approving it changes nothing and makes no version" in page


def test_approving_a_duplicate_says_nothing_changed_and_makes_no_version(
    proposed: Service, console: RunningConsole
) -> None:
    first = pending(proposed)[0]
    restate(proposed, first)
    version = proposed.runtime.store(STEERED).version()
    with console.client() as client:
        response = api_post(client, f"/api/skillbooks/{STEERED}/review/{first.id}/approve", {})
    assert response.status_code == 200, response.text
    answered = response.json()
    assert (answered["no_op"], answered["version"]) == (True, None)
    assert "nothing changed" in answered["message"]
    assert proposed.runtime.store(STEERED).version() == version


def test_the_bulk_form_decides_the_ticked_proposals_each_audited_and_needs_the_csrf_token(
    proposed: Service, console: RunningConsole
) -> None:
    first, second, third = pending(proposed)
    path = f"/skillbooks/{STEERED}/review/decide"
    fields = {"ids": [first.id, second.id], "decision": "reject", "note": "not general"}
    with console.client() as client:
        page = client.get(f"/skillbooks/{STEERED}/review").text
        forged = client.post(path, data=fields, follow_redirects=False)
        response = client.post(path, data={**fields, "csrf_token": csrf_of(client)}, follow_redirects=False)
    assert 'id="bulk-form"' in page and f'name="ids" value="{first.id}" form="bulk-form"' in page
    assert forged.status_code == 403
    assert response.status_code == 303
    assert parse_qs(urlparse(response.headers["location"]).query)["notice"] == ["proposals-decided"]
    review = proposed.runtime.store(STEERED).review
    assert [review.get(p.id).status for p in (first, second, third)] == [
        ProposalStatus.REJECTED,
        ProposalStatus.REJECTED,
        ProposalStatus.PENDING,
    ]
    audit = read_audit(proposed.runtime.redis, proposed.runtime.settings.queue_prefix)
    lines = [(e.action, e.target, e.outcome) for e in reversed(audit)]
    assert lines == [
        ("review:decide", STEERED, "ok"),
        ("review:reject", f"{STEERED}/{first.id}", "ok"),
        ("review:reject", f"{STEERED}/{second.id}", "ok"),
    ]


def test_the_api_approves_all_the_filters_pick_and_names_each_refusal(
    proposed: Service, console: RunningConsole
) -> None:
    first, second, third = pending(proposed)
    section = second.operations[0]["section"]
    with console.client() as client:
        api_post(client, f"/api/skillbooks/{STEERED}/review/{first.id}/reject", {})
        picked = api_post(
            client,
            f"/api/skillbooks/{STEERED}/review/decide",
            {"decision": "approve", "all": True, "section": section},
        )
        named = api_post(
            client,
            f"/api/skillbooks/{STEERED}/review/decide",
            {"decision": "approve", "ids": [first.id, third.id]},
        )
        neither = api_post(client, f"/api/skillbooks/{STEERED}/review/decide", {"decision": "approve"})
    assert picked.status_code == 200, picked.text
    assert [d["proposal_id"] for d in picked.json()["decided"]] == [second.id]
    assert named.status_code == 200, named.text
    assert [d["proposal_id"] for d in named.json()["decided"]] == [third.id]
    (refused,) = named.json()["refused"]
    assert refused["proposal_id"] == first.id
    assert "was rejected already" in refused["message"]
    assert neither.status_code == 400
    assert "give the proposals' ids (field ids) or all=true" in neither.json()["message"]
    added = added_contents(proposed)
    assert {second.operations[0]["content"], third.operations[0]["content"]} == added


# -- in a browser ------------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.browser
def test_in_chromium_a_reviewer_opens_the_queue_approves_one_and_rejects_another(
    proposed: Service, console: RunningConsole, tmp_path: Path
) -> None:
    first, second, _ = pending(proposed)
    with headless_chromium(tmp_path / "profile", headers=console.basic_auth_header()) as page:
        page.goto(f"{console.url}/skillbooks/{STEERED}/review")
        assert page.count("#proposals tr[data-proposal]") == 3
        assert "review" in page.text("#policy")
        page.screenshot(SCREENSHOTS / "review-queue.png")

        page.click(f'tr[data-proposal="{first.id}"] a.proposal-link')
        assert page.text("#proposal-id") == first.id
        assert first.operations[0]["content"] in page.text("body")
        page.screenshot(SCREENSHOTS / "review-proposal.png")
        page.fill("#approve-note", "a sound rule")
        page.click("#approve")
        assert urlparse(page.url()).path == f"/skillbooks/{STEERED}/review"
        assert page.text("#notice") == NOTICES["proposal-approved"]
        assert page.count("#proposals tr[data-proposal]") == 2

        page.goto(f"{console.url}/skillbooks/{STEERED}/review/{second.id}")
        page.fill("#reject-note", "too narrow")
        page.click("#reject")
        assert page.text("#notice") == NOTICES["proposal-rejected"]

        # The approved skill is on the skillbook's page now; the rejected one is not.
        page.goto(f"{console.url}/skillbooks/{STEERED}?status=all&per_page=500")
        skills = page.text("body")
        assert first.operations[0]["content"] in skills
        assert second.operations[0]["content"] not in skills
        # Both decisions are in the audit log, as the signed-in user.
        page.goto(f"{console.url}/audit")
        audit = page.text("#audit")
        page.screenshot(SCREENSHOTS / "audit.png")
    assert f"{console.ops.name}\treview:approve\t{STEERED}/{first.id}\tok" in audit
    assert f"{console.ops.name}\treview:reject\t{STEERED}/{second.id}\tok" in audit
    assert first.operations[0]["content"] in added_contents(proposed)
    assert second.operations[0]["content"] not in added_contents(proposed)
    rejected = proposed.runtime.store(STEERED).review.get(second.id)
    assert rejected.decision is not None and rejected.decision.note == "too narrow"

"""The skillbooks area over HTTP: a skillbook's page and API, a skill's page and API, lifecycle actions."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import redis

from ace_workers.console.audit import read_audit
from ace_workers.core.updates import UpdateBatch, UpdateOperation
from ace_workers.distributed.service import Service
from ace_workers.distributed.store.store import RedisSkillbookStore
from tests.support.catalogue import seed_catalogue
from tests.support.console import RunningConsole, post_form, running_console

BOOK = "catalogue"


@pytest.fixture
def catalogue(idle_service: Service) -> RedisSkillbookStore:
    """The catalogue skillbook (tests/support/catalogue.py) in the console's Redis."""
    return seed_catalogue(idle_service.runtime.store(BOOK))


@pytest.fixture
def catalogue_console(idle_service: Service, catalogue: RedisSkillbookStore) -> Iterator[RunningConsole]:
    with running_console(idle_service) as running:
        yield running


def _ids(store: RedisSkillbookStore, status: str) -> list[str]:
    """The store's skills of ``status``, in the order Skillbook.skills() gives (active or all)."""
    _, view = store.cached_snapshot()
    skills = view.skills(include_invalid=status != "active")
    return [s.id for s in skills if status in ("active", "all") or s.status == status]


def _listed(client: httpx.Client, path: str, **params: Any) -> list[str]:
    data = client.get(f"/api{path}", params=params).json()
    return [skill["id"] for group in data["groups"] for skill in group["skills"]]


def _every_page(client: httpx.Client, path: str, per_page: int, **params: Any) -> list[str]:
    first = client.get(f"/api{path}", params={**params, "per_page": per_page}).json()
    found = []
    for number in range(1, first["pages"] + 1):
        found += _listed(client, path, **params, per_page=per_page, page=number)
    return found


def test_the_skillbook_api_shows_the_head_version_fill_labels_and_proposals(
    console: RunningConsole, fleet: Service
) -> None:
    store = fleet.runtime.store("support")
    store.labels.set("prod", store.version(), actor="user:setup")
    with console.client() as client:
        data = client.get("/api/skillbooks/support").json()
    assert data["version"] == store.version()
    assert data["active_skills"] == store.active_skills() > 0
    assert data["max_skills"] == store.max_skills
    assert data["labels"] == {"prod": store.version()}
    assert data["pending_proposals"] == store.review.pending_count()
    assert data["links"] == {
        "history": "/skillbooks/support/history",
        "review": "/skillbooks/support/review",
        "evaluations": "/skillbooks/support/evaluations",
    }


def test_the_skillbook_lists_the_active_skills_in_the_store_order_with_their_counts(
    console: RunningConsole, fleet: Service
) -> None:
    store = fleet.runtime.store("support")
    _, view = store.cached_snapshot()
    with console.client() as client:
        data = client.get("/api/skillbooks/support").json()
    listed = [skill for group in data["groups"] for skill in group["skills"]]
    assert [skill["id"] for skill in listed] == [s.id for s in view.skills()]
    for skill in listed:
        stored = view.get_skill(skill["id"])
        assert stored is not None
        assert (skill["content"], skill["helpful"], skill["harmful"], skill["neutral"]) == (
            stored.content,
            stored.helpful,
            stored.harmful,
            stored.neutral,
        )
        assert skill["url"] == f"/skillbooks/support/skills/{skill['id']}"
    assert [group["section"] for group in data["groups"]] == view.sections()


def test_the_skillbook_page_links_its_history_review_evaluations_and_skills(console: RunningConsole) -> None:
    with console.client() as client:
        page = client.get("/skillbooks/support")
        first = client.get("/api/skillbooks/support").json()["groups"][0]["skills"][0]
    assert page.status_code == 200
    for link in (
        "/skillbooks/support/history",
        "/skillbooks/support/review",
        "/skillbooks/support/evaluations",
    ):
        assert f'href="{link}"' in page.text, link
    assert f'href="{first["url"]}"' in page.text
    assert 'href="/api/skillbooks/support"' in page.text


def test_groups_are_runs_of_one_section_in_the_order_sections_first_appear(
    catalogue_console: RunningConsole, catalogue: RedisSkillbookStore
) -> None:
    with catalogue_console.client() as client:
        data = client.get(f"/api/skillbooks/{BOOK}").json()
        listed = _listed(client, f"/skillbooks/{BOOK}")
    assert [group["section"] for group in data["groups"]] == ["billing", "shipping", "returns"]
    assert all(skill["section"] == group["section"] for group in data["groups"] for skill in group["skills"])
    assert listed == _ids(catalogue, "active")


def test_status_filters_show_archived_removed_or_every_skill_and_count_each(
    catalogue_console: RunningConsole, catalogue: RedisSkillbookStore
) -> None:
    stats = catalogue.export().stats()
    with catalogue_console.client() as client:
        counts = client.get(f"/api/skillbooks/{BOOK}").json()["status_counts"]
        archived = _listed(client, f"/skillbooks/{BOOK}", status="archived")
        removed = _listed(client, f"/skillbooks/{BOOK}", status="invalid")
        everything = _every_page(client, f"/skillbooks/{BOOK}", 500, status="all")
    assert counts == {
        "active": stats["skills"],
        "invalid": stats["invalid"],
        "archived": stats["archived"],
        "all": stats["skills"] + stats["invalid"] + stats["archived"],
    }
    assert set(archived) == {s.id for s in catalogue.archived()}
    assert removed == [s.id for s in catalogue.export().skills(include_invalid=True) if s.status == "invalid"]
    assert len(removed) == 1
    assert everything == _ids(catalogue, "all")


def test_a_pinned_skill_is_marked_and_an_archived_one_says_so(
    catalogue_console: RunningConsole, catalogue: RedisSkillbookStore
) -> None:
    with catalogue_console.client() as client:
        data = client.get(f"/api/skillbooks/{BOOK}", params={"status": "all", "per_page": 500}).json()
    skills = {skill["id"]: skill for group in data["groups"] for skill in group["skills"]}
    pinned = [skill_id for skill_id, skill in skills.items() if skill["pinned"]]
    assert pinned == [s.id for s in catalogue.export().skills() if s.pinned]
    assert {skill_id for skill_id, skill in skills.items() if skill["status"] == "archived"} == {
        s.id for s in catalogue.archived()
    }


def test_the_search_matches_content_and_ids_whatever_the_case(
    catalogue_console: RunningConsole, catalogue: RedisSkillbookStore
) -> None:
    active = catalogue.export().skills()
    with catalogue_console.client() as client:
        refunds = client.get(f"/api/skillbooks/{BOOK}", params={"q": "rEFUND"}).json()
        by_id = _listed(client, f"/skillbooks/{BOOK}", q=active[5].id.upper())
    expected = [s.id for s in active if "refund" in s.content.lower()]
    assert [skill["id"] for group in refunds["groups"] for skill in group["skills"]] == expected
    assert refunds["total"] == len(expected) > 0
    assert by_id == [active[5].id]


def test_the_section_filter_keeps_one_section_and_the_counts_say_where_the_rest_are(
    catalogue_console: RunningConsole, catalogue: RedisSkillbookStore
) -> None:
    active = catalogue.export().skills()
    with catalogue_console.client() as client:
        data = client.get(f"/api/skillbooks/{BOOK}", params={"section": "shipping", "q": "refund"}).json()
    assert data["total"] == sum(
        1 for s in active if s.section == "shipping" and "refund" in s.content.lower()
    )
    assert {group["section"] for group in data["groups"]} == {"shipping"}
    expected = {
        section: sum(1 for s in active if s.section == section and "refund" in s.content.lower())
        for section in ("billing", "shipping", "returns")
    }
    assert {entry["section"]: entry["count"] for entry in data["sections"]} == {
        section: count for section, count in expected.items() if count
    }


def test_pages_split_the_listing_with_totals_and_together_hold_it_all(
    catalogue_console: RunningConsole, catalogue: RedisSkillbookStore
) -> None:
    active = _ids(catalogue, "active")
    with catalogue_console.client() as client:
        second = client.get(f"/api/skillbooks/{BOOK}", params={"per_page": 7, "page": 2}).json()
        every = _every_page(client, f"/skillbooks/{BOOK}", 7)
    assert second["total"] == len(active)
    assert second["pages"] == -(-len(active) // 7)
    assert [skill["id"] for group in second["groups"] for skill in group["skills"]] == active[7:14]
    assert every == active


@pytest.mark.parametrize(
    ("params", "named"),
    [
        ({"page": "0"}, "page=0"),
        ({"page": "two"}, "page='two'"),
        ({"page": "99"}, "page=99"),
        ({"per_page": "501"}, "per_page=501"),
        ({"status": "deleted"}, "status='deleted'"),
        ({"q": "x" * 201}, "q:"),
    ],
)
def test_bad_parameters_are_refused_with_a_400_naming_them(
    catalogue_console: RunningConsole, params: dict[str, str], named: str
) -> None:
    with catalogue_console.client() as client:
        response = client.get(f"/api/skillbooks/{BOOK}", params=params)
        page = client.get(f"/skillbooks/{BOOK}", params=params)
    assert response.status_code == 400
    assert named in response.json()["message"]
    assert page.status_code == 400


def test_a_missing_skillbook_or_skill_is_a_404_naming_it(console: RunningConsole) -> None:
    with console.client() as client:
        book = client.get("/api/skillbooks/nowhere")
        skill = client.get("/api/skillbooks/support/skills/nosuch-00099")
        skill_page = client.get("/skillbooks/support/skills/nosuch-00099")
    assert book.status_code == 404
    assert "'nowhere'" in book.json()["message"]
    assert skill.status_code == 404
    assert "'nosuch-00099'" in skill.json()["message"]
    assert skill_page.status_code == 404
    assert "nosuch-00099" in skill_page.text


def test_the_skill_page_shows_the_provenance_the_fleet_recorded(
    console: RunningConsole, fleet: Service
) -> None:
    store = fleet.runtime.store("support")
    skill_id = store.export().skills()[0].id
    _, whole = store.read_skill(skill_id)
    assert whole is not None
    with console.client() as client:
        data = client.get(f"/api/skillbooks/support/skills/{skill_id}").json()
        page = client.get(f"/skillbooks/support/skills/{skill_id}")
    assert (data["skill"]["content"], data["state"]) == (whole["content"], "active")
    assert data["occurrence_totals"] == whole["occurrence_totals"]
    stored = whole["occurrences"]
    assert [(o["actor"], o["batch_id"], o["sample_index"], o["insight"]) for o in data["occurrences"]] == [
        (o["actor"], o["batch_id"], o["sample_index"], o["insight"]) for o in stored
    ]
    occurrence = data["occurrences"][0]
    assert fleet.runtime.batches.exists(occurrence["batch_id"])
    assert occurrence["evidence"]["status"] == "found"
    assert occurrence["batch_url"] == f"/batches/{occurrence['batch_id']}"
    assert f'href="/batches/{occurrence["batch_id"]}"' in page.text
    assert [change["version"] for change in data["changes"]] == [
        change.version for change in store.history(50) if skill_id in change.after
    ]


def test_pin_from_the_page_form_pins_the_skill_as_the_user_and_audits_it(
    console: RunningConsole, fleet: Service, redis_client: redis.Redis
) -> None:
    store = fleet.runtime.store("support")
    skill_id = store.export().skills()[0].id
    with console.client() as client:
        response = post_form(client, f"/skillbooks/support/skills/{skill_id}/pin", {"note": "keep this one"})
    assert response.status_code == 303
    assert response.headers["location"] == f"/skillbooks/support/skills/{skill_id}?notice=skill-pin"
    assert store.export().get_skill(skill_id).pinned  # type: ignore[union-attr]
    change = store.history(1)[0]
    assert (change.source or {})["actor"] == console.ops.name
    assert (change.source or {})["note"] == "keep this one"
    entry = read_audit(redis_client, fleet.runtime.settings.queue_prefix, 1)[0]
    assert (entry.user, entry.action, entry.target, entry.outcome) == (
        console.ops.name,
        "skill:pin",
        f"support/{skill_id}",
        "ok",
    )


def test_archive_restore_and_unpin_through_the_api_change_the_skill_and_its_page(
    console: RunningConsole, fleet: Service
) -> None:
    store = fleet.runtime.store("support")
    skill_id = store.export().skills()[0].id
    base = f"/api/skillbooks/support/skills/{skill_id}"
    with console.client(token=console.token) as client:
        archived = client.post(f"{base}/archive", json={"note": "stale"}).json()
        after_archive = client.get(base).json()
        client.post(f"{base}/restore", json={})
        client.post(f"{base}/pin", json={})
        refused = client.post(f"{base}/archive", json={})
        client.post(f"{base}/unpin", json={})
        listing = client.get("/api/skillbooks/support").json()
    assert (archived["ok"], archived["changed"], archived["version"]) == (
        True,
        True,
        after_archive["version"],
    )
    assert (after_archive["state"], after_archive["actions"]) == ("archived", ["restore"])
    assert after_archive["skill"]["archive_info"]["by"] == console.keys.script.name
    assert refused.status_code == 409  # refused: the pin stands (a conflict, as on every front end)
    assert "pinned" in refused.json()["message"]
    skill = store.export().get_skill(skill_id)
    assert skill is not None
    assert (skill.status, skill.pinned) == ("active", False)
    assert skill_id in [s["id"] for group in listing["groups"] for s in group["skills"]]


def test_an_action_on_a_missing_skill_is_a_404(console: RunningConsole) -> None:
    with console.client(token=console.token) as client:
        response = client.post("/api/skillbooks/support/skills/nosuch-00099/pin", json={})
    assert response.status_code == 404
    assert "nosuch-00099" in response.json()["message"]


def test_skill_text_from_redis_is_escaped_on_the_pages(idle_service: Service) -> None:
    store = idle_service.runtime.store("hostile")
    hostile = '<script>alert("x")</script><img src=x onerror=alert(1)>'
    store.apply(UpdateBatch(operations=[UpdateOperation(type="ADD", section="general", content=hostile)]))
    skill_id = store.export().skills()[0].id
    with running_console(idle_service) as running, running.client() as client:
        pages = [client.get("/skillbooks/hostile"), client.get(f"/skillbooks/hostile/skills/{skill_id}")]
    for page in pages:
        assert page.status_code == 200
        assert "<script>alert" not in page.text
        assert "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;" in page.text

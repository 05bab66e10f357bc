"""The console's audit log: every action, done or refused, with its user, as GET /api/audit shows it."""

from __future__ import annotations

from ace_workers.distributed.service import Service
from tests.support.console import RunningConsole, api_post


def test_an_action_is_logged_with_its_user_and_target(console: RunningConsole, fleet: Service) -> None:
    _, view = fleet.runtime.store("support").cached_snapshot()
    skill_id = view.skills()[0].id
    with console.client(token=console.token) as client:
        done = client.post(f"/api/skillbooks/support/skills/{skill_id}/pin", json={"note": "keep"})
        (entry,) = client.get("/api/audit").json()["entries"]
    assert done.status_code == 200, done.text
    assert (entry["user"], entry["action"], entry["target"], entry["outcome"]) == (
        console.keys.script.name,
        "skill:pin",
        f"support/{skill_id}",
        "ok",
    )


def test_a_refused_action_is_logged_with_its_reason(console: RunningConsole) -> None:
    with console.client() as client:
        refused = api_post(client, "/api/skillbooks/support/skills/no-such-skill/pin", {})
        (entry,) = client.get("/api/audit").json()["entries"]
    assert refused.status_code == 404
    assert entry["user"] == console.ops.name
    assert entry["outcome"].startswith("refused: ")
    assert "no-such-skill" in entry["outcome"]


def test_the_newest_entry_comes_first_and_limit_caps_them(console: RunningConsole, fleet: Service) -> None:
    _, view = fleet.runtime.store("support").cached_snapshot()
    skill_id = view.skills()[0].id
    with console.client(token=console.token) as client:
        for verb in ("pin", "unpin", "pin"):
            assert (
                client.post(f"/api/skillbooks/support/skills/{skill_id}/{verb}", json={}).status_code == 200
            )
        entries = client.get("/api/audit", params={"limit": 2}).json()["entries"]
        bad = client.get("/api/audit", params={"limit": 0})
    assert [e["action"] for e in entries] == ["skill:pin", "skill:unpin"]
    assert bad.status_code == 400
    assert "limit" in bad.json()["message"]

"""One bad record in Redis is named by its key and never takes a page or a list down for everyone."""

from __future__ import annotations

import redis

from ace_workers.core import Skillbook
from ace_workers.distributed.service import Service
from ace_workers.distributed.store.keys import SkillbookKeys, batch_key, registry_key
from ace_workers.sim import failure_traces
from tests.support.console import running_console


def test_a_corrupt_batch_counter_is_an_answer_naming_its_key_and_field(
    idle_service: Service, redis_client: redis.Redis
) -> None:
    prefix = idle_service.runtime.settings.queue_prefix
    handle = idle_service.producer.enqueue_traces(failure_traces(2), "waiting")
    key = batch_key(prefix, handle.batch_id)
    redis_client.hset(key, "total", "lots")

    with running_console(idle_service) as console, console.client() as client:
        answer = client.get(f"/api/batches/{handle.batch_id}")

    assert answer.status_code == 500, answer.text
    assert f"key '{key}' field 'total' holds 'lots', not a number" in answer.json()["message"]


def test_a_bad_registry_member_and_a_corrupt_skillbook_leave_the_others_on_every_page(
    idle_service: Service, redis_client: redis.Redis
) -> None:
    prefix = idle_service.runtime.settings.queue_prefix
    for name in ("good", "broken"):
        book = Skillbook()
        book.add_skill("general", "Check units.")
        idle_service.runtime.store(name).import_skillbook(book)
    redis_client.set(SkillbookKeys("broken", prefix).version, "abc")
    redis_client.sadd(registry_key(prefix), "no/slash")

    with running_console(idle_service) as console, console.client() as client:
        answers = {path: client.get(path) for path in ("/api/skillbooks", "/api/tenants", "/api/fleet")}
        pages = {path: client.get(path) for path in ("/skillbooks", "/tenants", "/fleet")}

    assert {path: answer.status_code for path, answer in {**answers, **pages}.items()} == dict.fromkeys(
        [*answers, *pages], 200
    )
    rows = {row["name"]: row for row in answers["/api/skillbooks"].json()["skillbooks"]}
    assert sorted(rows) == ["broken", "good", "no/slash"]
    assert rows["good"]["version"] == 1
    assert rows["good"]["unreadable"] is None
    assert f"key '{SkillbookKeys('broken', prefix).version}' holds 'abc'" in rows["broken"]["unreadable"]
    assert "lists 'no/slash', which cannot name a skillbook" in rows["no/slash"]["unreadable"]
    assert "which cannot name a skillbook" in pages["/skillbooks"].text

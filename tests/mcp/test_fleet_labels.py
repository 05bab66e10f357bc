"""``ACE_MCP_SKILLBOOK=NAME@LABEL`` on the fleet back end: reads serve the label's version while the
head moves on, and a write to the label is refused, naming it. Real Redis, real workers."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest

from ace_workers.core import Skillbook
from tests.support.mcp import CLIENTS, call, refused, server_env
from tests.support.operations import add, batch
from tests.support.workers import running_service

pytestmark = pytest.mark.slow


def test_a_labelled_fleet_server_reads_the_label_and_refuses_to_write_it(
    redis_url: str, tmp_path: Path
) -> None:
    with running_service(redis_url) as service:
        store = service.runtime.store("shared")
        book = Skillbook()
        book.add_skill("general", "Answer politely.")
        prod = store.import_skillbook(book)
        store.labels.set("prod", prod, actor="user:test")
        store.apply(batch(add("Check units.", "math"), add("Estimate first.", "math")))  # the head moves on
        (tmp_path / "other.json").write_text(json.dumps(Skillbook().to_dict()))
        env = server_env(
            tmp_path,
            ACE_REDIS_URL=redis_url,
            ACE_QUEUE_PREFIX=service.runtime.settings.queue_prefix,
            ACE_MCP_SKILLBOOK="shared@prod",
        )

        async def scenario() -> None:
            async with CLIENTS["http"](env) as client:
                got = await call(client, "ace.skillbook.get", {"session_id": "s"})
                assert (got["skillbook"], got["version"]) == ("shared@prod", prod)
                assert [skill["content"] for skill in got["skills"]] == ["Answer politely."]
                asked = await call(client, "ace.ask", {"session_id": "s", "question": "What is 2+2?"})
                assert asked["skill_count"] == 1
                saved = await call(client, "ace.skillbook.save", {"session_id": "s", "path": "prod.json"})
                assert saved["saved_skill_count"] == 1
                error = await refused(client, "ace.skillbook.load", {"session_id": "s", "path": "other.json"})
                assert error.data["kind"] == "label_read_only"
                assert "this server serves label 'prod' of skillbook 'shared'" in error.message

        head = store.version()
        anyio.run(scenario)
        assert store.version() == head
        assert len(store.export().skills()) == 3
        assert store.labels.get("prod") == prod

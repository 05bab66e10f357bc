"""docs/intake.md's Redis ACL users hold on a real Redis: workers and intake learn as ``ace-worker``,
and ``ace-reader`` reads what they wrote but cannot write."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import redis

from ace_workers.distributed.producer.http_producer import HttpProducer
from ace_workers.distributed.settings import WorkerSettings
from ace_workers.operations import FleetClient
from ace_workers.sim import failure_traces
from tests.support.docs import code_blocks
from tests.support.intake import ALPHA_BOOK, make_tenants_and_keys, running_intake
from tests.support.servers import PrivateRedis
from tests.support.waiting import wait_for
from tests.support.workers import running_service

(ACL_FILE,) = code_blocks("docs/intake.md", "## Redis users: who holds which password", language="text")
USERS = dict(re.findall(r"^user (ace-\w+) (.+)$", ACL_FILE, re.M))
# A rule ">PASSWORD" sets the user's password.
PASSWORDS = {name: rules.split(">", 1)[1].split()[0] for name, rules in USERS.items()}


@pytest.fixture
def acl_redis(tmp_path: Path) -> PrivateRedis:
    """A Redis of its own with the page's users (its ``default`` user stays on: the test's own door)."""
    with PrivateRedis(tmp_path / "redis", persistent=False) as server:
        admin = redis.Redis(port=server.port)
        for name, rules in USERS.items():
            admin.execute_command("ACL", "SETUSER", name, "reset", *rules.split())
        admin.close()
        yield server


def url_of(server: PrivateRedis, user: str) -> str:
    return f"redis://{user}:{PASSWORDS[user]}@127.0.0.1:{server.port}/0"


def test_the_page_names_a_worker_and_a_reader_user() -> None:
    assert sorted(USERS) == ["ace-reader", "ace-worker"]
    assert "user default off" in ACL_FILE


def test_workers_and_intake_learn_as_the_worker_user_and_the_reader_only_reads(
    acl_redis: PrivateRedis,
) -> None:
    with running_service(url_of(acl_redis, "ace-worker"), queue_prefix="ace") as service:
        keys = make_tenants_and_keys(service)
        with running_intake(service) as url:
            producer = HttpProducer(url, keys.alpha_learn)
            batch = producer.enqueue_traces(failure_traces(4), ALPHA_BOOK)
            wait_for(lambda: producer.status(batch.batch_id)["state"] != "running", 60, "the batch to finish")
            assert producer.status(batch.batch_id)["done"] == 4
    denied = redis.Redis(port=acl_redis.port).execute_command("ACL", "LOG")
    assert denied == []  # no command of the fleet was refused
    reader = FleetClient(WorkerSettings(queue_prefix="ace"), url_of(acl_redis, "ace-reader"))
    try:
        assert reader.skillbook_names() == [ALPHA_BOOK]
        assert reader.existing_store(ALPHA_BOOK).active_skills() > 0
        with pytest.raises(redis.exceptions.NoPermissionError):
            reader.redis.set("ace:anything", "1")
    finally:
        reader.close()

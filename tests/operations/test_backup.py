"""Backup and restore on a real Redis and a real Redis Cluster: every key, label, tenant and key back."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from redis.cluster import RedisCluster

from ace_workers.core import UpdateBatch, UpdateOperation
from ace_workers.distributed.settings import WorkerSettings
from ace_workers.distributed.store.backup import load_backup
from ace_workers.distributed.store.errors import (
    BackupFormatError,
    BackupTargetError,
    RestoreSkillbooksExistError,
    RestoreTargetNotEmptyError,
)
from ace_workers.distributed.tenancy import Tenant
from ace_workers.distributed.tenancy.errors import TenantConflictError
from ace_workers.operations import FleetClient, Principal, open_fleet, operator
from ace_workers.operations.backup import backup_fleet, restore_fleet
from ace_workers.operations.errors import FleetAdminRequiredError
from tests.support.backups import BINARY, raw_state, seed_fleet
from tests.support.fixtures import server_or_cluster

OPERATOR = operator("user:ops")


@pytest.fixture(params=["server", "cluster"])
def redis_client(request: pytest.FixtureRequest) -> Iterator[redis.Redis]:
    """Each test on one Redis and on Redis Cluster alike."""
    yield from server_or_cluster(request)


@pytest.fixture
def url(request: pytest.FixtureRequest, redis_client: redis.Redis) -> str:
    """The URL of the Redis (or cluster) ``redis_client`` talks to."""
    if isinstance(redis_client, RedisCluster):
        return str(request.getfixturevalue("redis_cluster").url)
    return str(request.getfixturevalue("redis_url"))


def fleet_on(url: str, prefix: str) -> FleetClient:
    return FleetClient(WorkerSettings(queue_prefix=prefix), url)


@pytest.fixture
def source(url: str) -> Iterator[tuple[FleetClient, str]]:
    """The fleet under prefix "src", seeded; and its API key's secret."""
    with open_fleet(WorkerSettings(queue_prefix="src"), url) as fleet:
        yield fleet, seed_fleet(fleet)


def test_a_restored_copy_holds_every_key_as_the_source_had_it(
    source: tuple[FleetClient, str], url: str, redis_client: redis.Redis, tmp_path: Path
) -> None:
    fleet, _ = source
    before = raw_state(redis_client, "src")
    backup_fleet(fleet, OPERATOR, tmp_path / "bk")
    with open_fleet(WorkerSettings(queue_prefix="dst"), url) as copy:
        report = restore_fleet(copy, OPERATOR, tmp_path / "bk")
    assert report.skillbooks == ["beta-notes", "book"]
    after = raw_state(redis_client, "dst")
    assert sorted(after) == sorted(before)
    for key, (key_type, has_ttl, content) in before.items():
        assert after[key] == (key_type, has_ttl, content), key
    assert after["{sb:book}:embeddings"][2][b"vec"] == BINARY


def test_the_copy_serves_skillbooks_labels_tenants_and_keys(
    source: tuple[FleetClient, str], url: str, tmp_path: Path
) -> None:
    fleet, secret = source
    backup_fleet(fleet, OPERATOR, tmp_path / "bk")
    with open_fleet(WorkerSettings(queue_prefix="dst"), url) as copy:
        restore_fleet(copy, OPERATOR, tmp_path / "bk")
        book, copied = fleet.store("book"), copy.store("book")
        assert copied.version() == book.version() == 4
        assert copied.export().to_dict() == book.export().to_dict()
        assert copied.labels.all() == {"prod": 1, "canary": 3}
        assert copied.snapshot_of("prod")[1].to_dict() == book.snapshot_of("prod")[1].to_dict()
        assert [move.to_dict() for move in copied.labels.history()] == [
            m.to_dict() for m in book.labels.history()
        ]
        assert copied.review.pending_count() == book.review.pending_count() == 1
        assert [p.id for p in copied.review.proposals()] == [p.id for p in book.review.proposals()]
        assert copy.tenants.all() == fleet.tenants.all()
        key = copy.api_keys.authenticate(secret)
        assert key is not None
        assert (key.tenant, key.role) == ("alpha", "read")
        assert copy.skillbook_names() == ["beta-notes", "book"]


def test_a_target_holding_data_is_refused_and_left_as_it_was(
    source: tuple[FleetClient, str], tmp_path: Path
) -> None:
    fleet, _ = source
    backup_fleet(fleet, OPERATOR, tmp_path / "bk")
    with pytest.raises(
        RestoreTargetNotEmptyError, match=r"already holds data under prefix 'src' \(e\.g\. key "
    ):
        restore_fleet(fleet, OPERATOR, tmp_path / "bk")


def test_merge_adds_missing_skillbooks_and_refuses_one_the_target_has(
    source: tuple[FleetClient, str], url: str, redis_client: redis.Redis, tmp_path: Path
) -> None:
    fleet, secret = source
    backup_fleet(fleet, OPERATOR, tmp_path / "bk")
    with open_fleet(WorkerSettings(queue_prefix="dst"), url) as copy:
        copy.store("local").apply(
            UpdateBatch(operations=[UpdateOperation(type="ADD", section="s", content="x")])
        )
        restore_fleet(copy, OPERATOR, tmp_path / "bk", merge=True)
        assert copy.skillbook_names() == ["beta-notes", "book", "local"]
        assert copy.store("local").version() == 1
        assert copy.api_keys.authenticate(secret) is not None
        before = raw_state(redis_client, "dst")
        with pytest.raises(RestoreSkillbooksExistError, match="skillbooks 'beta-notes', 'book'"):
            restore_fleet(copy, OPERATOR, tmp_path / "bk", merge=True)
        assert raw_state(redis_client, "dst") == before


def test_a_tenants_admin_may_not_back_up_the_fleet(source: tuple[FleetClient, str], tmp_path: Path) -> None:
    fleet, _ = source
    with pytest.raises(FleetAdminRequiredError):
        backup_fleet(fleet, Principal("key:k1", "alpha", "admin", "k1"), tmp_path / "bk")
    assert not (tmp_path / "bk").exists()


def test_a_backup_taken_while_a_writer_writes_holds_each_skillbook_at_one_version(
    url: str, redis_client: redis.Redis, tmp_path: Path
) -> None:
    names = ["w1", "w2", "w3"]
    with open_fleet(WorkerSettings(queue_prefix="busy"), url) as fleet:
        for name in names:
            fleet.store(name).apply(
                UpdateBatch(operations=[UpdateOperation(type="ADD", section="s", content="0")])
            )
        stop, writing = threading.Event(), threading.Event()

        def write() -> None:  # one new skill per version, so a version says how many skills there are
            n = 0
            while not stop.is_set():
                n += 1
                for name in names:
                    batch = UpdateBatch(
                        operations=[UpdateOperation(type="ADD", section="s", content=f"rule {n}")]
                    )
                    fleet.store(name).apply(batch)
                writing.set()

        writer = threading.Thread(target=write)
        writer.start()
        try:
            assert writing.wait(10)
            manifest = backup_fleet(fleet, OPERATOR, tmp_path / "bk")
        finally:
            stop.set()
            writer.join()
        final = {name: fleet.store(name).version() for name in names}
    taken = {book["name"]: book["version"] for book in manifest["skillbooks"]}
    assert all(taken[name] > 1 for name in names), taken  # the writer wrote before the backup began
    assert any(taken[name] < final[name] for name in names), (taken, final)  # ... and during it
    with open_fleet(WorkerSettings(queue_prefix="copy"), url) as copy:
        restore_fleet(copy, OPERATOR, tmp_path / "bk")
        for book in manifest["skillbooks"]:
            store = copy.store(book["name"])
            assert store.version() == book["version"]
            assert len(store.export().skills()) == book["version"], book["name"]
            assert store.history(limit=1)[0].version == book["version"], book["name"]


def test_an_existing_folder_with_files_is_refused(source: tuple[FleetClient, str], tmp_path: Path) -> None:
    fleet, _ = source
    (tmp_path / "bk").mkdir()
    (tmp_path / "bk" / "notes.txt").write_text("mine")
    with pytest.raises(BackupTargetError, match="exists and is not empty"):
        backup_fleet(fleet, OPERATOR, tmp_path / "bk")
    assert (tmp_path / "bk" / "notes.txt").read_text() == "mine"


def test_a_corrupted_manifest_is_refused_naming_file_and_line(
    source: tuple[FleetClient, str], tmp_path: Path
) -> None:
    fleet, _ = source
    backup_fleet(fleet, OPERATOR, tmp_path / "bk")
    manifest = tmp_path / "bk" / "manifest.json"
    manifest.write_text(manifest.read_text().replace('"skillbooks": [', '"skillbooks": [,', 1))
    with pytest.raises(BackupFormatError, match=r"manifest\.json line \d+: not JSON"):
        load_backup(tmp_path / "bk")


def test_a_truncated_file_is_refused_naming_file_and_line(
    source: tuple[FleetClient, str], tmp_path: Path
) -> None:
    fleet, _ = source
    backup_fleet(fleet, OPERATOR, tmp_path / "bk")
    book = tmp_path / "bk" / "skillbook.book.jsonl"
    lines = book.read_text().splitlines(keepends=True)
    book.write_text("".join(lines[:3]) + lines[3][: len(lines[3]) // 2])
    with pytest.raises(BackupFormatError, match=r"skillbook\.book\.jsonl line 4: not a backup record"):
        load_backup(tmp_path / "bk")
    book.write_text("".join(lines[:3]))
    with pytest.raises(
        BackupFormatError, match=r"skillbook\.book\.jsonl line 3: holds 3 records, the manifest"
    ):
        load_backup(tmp_path / "bk")


def test_a_record_of_another_skillbook_is_refused(source: tuple[FleetClient, str], tmp_path: Path) -> None:
    fleet, _ = source
    backup_fleet(fleet, OPERATOR, tmp_path / "bk")
    book = tmp_path / "bk" / "skillbook.book.jsonl"
    record = {"key": "{sb:other}:version", "type": "string", "ttl_ms": None, "value": "9"}
    lines = book.read_text().splitlines()
    book.write_text("\n".join([json.dumps(record), *lines[1:]]) + "\n")
    with pytest.raises(BackupFormatError, match=r"line 1: key '\{sb:other\}:version' does not belong"):
        load_backup(tmp_path / "bk")


def test_a_bad_record_in_any_file_restores_nothing(
    source: tuple[FleetClient, str], url: str, redis_client: redis.Redis, tmp_path: Path
) -> None:
    fleet, _ = source
    backup_fleet(fleet, OPERATOR, tmp_path / "bk")
    book = tmp_path / "bk" / "skillbook.book.jsonl"  # read after beta-notes: its records are checked first
    lines = book.read_text().splitlines()
    changes = next(n for n, line in enumerate(lines) if json.loads(line)["key"] == "{sb:book}:changes")
    record = json.loads(lines[changes])
    record["value"][0][0] = "not-an-id"
    lines[changes] = json.dumps(record)
    book.write_text("\n".join(lines) + "\n")
    bad_id = rf"line {changes + 1}: .*entry id 'not-an-id'"
    with (
        open_fleet(WorkerSettings(queue_prefix="dst"), url) as copy,
        pytest.raises(BackupFormatError, match=bad_id),
    ):
        restore_fleet(copy, OPERATOR, tmp_path / "bk")
    assert raw_state(redis_client, "dst") == {}


def test_merge_refuses_a_tenant_claiming_a_skillbook_a_target_tenant_owns(
    source: tuple[FleetClient, str], url: str, redis_client: redis.Redis, tmp_path: Path
) -> None:
    fleet, _ = source
    backup_fleet(fleet, OPERATOR, tmp_path / "bk")
    with open_fleet(WorkerSettings(queue_prefix="dst"), url) as copy:
        copy.tenants.add(Tenant("gamma", skillbooks=("book",)))
        before = raw_state(redis_client, "dst")
        with pytest.raises(
            TenantConflictError, match="tenant 'alpha' cannot own skillbook 'book': tenant 'gamma'"
        ):
            restore_fleet(copy, OPERATOR, tmp_path / "bk", merge=True)
    assert raw_state(redis_client, "dst") == before

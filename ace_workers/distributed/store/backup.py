"""A logical backup of the fleet's lasting state, and its restore into an empty Redis or Redis Cluster.

A backup is a folder::

    manifest.json            format, schema and ace-workers versions, when, the source prefix,
                             each skillbook with its version and record count, the fleet's count
    skillbook.NAME.jsonl     one record per key of skillbook NAME (backup_records.py)
    fleet.jsonl              the tenants, their version counter, the API keys' hashes and ids

Each skillbook is read in one MULTI (its keys share one hash slot) while its version key is
WATCHed, so it is copied at one version: a writer that moves it makes the read start again.
The folder is written as ``DIR.partial`` and renamed when every file is synced, so a ``DIR``
that exists is whole. What is left out: batches, dead letters, the limiter's windows and the
locks, which are work in flight or expire; a stream left empty by deletes is not copied.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import redis
from redis.exceptions import WatchError

from ...extras import PROJECT_VERSION
from .backup_records import KEY_TYPES, decode_record, queue_read, queue_write, record_of
from .errors import (
    BackupFormatError,
    BackupSchemaError,
    BackupTargetError,
    CorruptDataError,
    RestoreSkillbooksExistError,
    RestoreTargetNotEmptyError,
    VersionConflict,
)
from .keys import (
    SkillbookKeys,
    api_key_ids_key,
    api_keys_key,
    registry_key,
    schema_key,
    schema_lock_key,
    tenants_key,
    tenants_version_key,
    validate_skillbook_name,
)
from .replies import decode_text
from .schema import SCHEMA_VERSION
from .transactions import watch_keys

__all__ = [
    "FLEET_FILE",
    "FORMAT_VERSION",
    "MANIFEST",
    "Backup",
    "load_backup",
    "restore_backup",
    "skillbook_file",
    "write_backup",
]

logger = logging.getLogger(__name__)

FORMAT = "ace-workers-backup"
FORMAT_VERSION = 1
MANIFEST = "manifest.json"
FLEET_FILE = "fleet.jsonl"
# How often a skillbook's read starts again when a writer moved its version meanwhile.
READ_ATTEMPTS = 100

Say = Callable[[str], None]


def skillbook_file(name: str) -> str:
    """The file of skillbook ``name`` in a backup folder (names cannot hold a path separator)."""
    return f"skillbook.{name}.jsonl"


def _fleet_groups(prefix: str) -> list[list[str]]:
    """The fleet's keys a backup copies, in groups that share a hash slot (each read in one MULTI)."""
    return [
        [tenants_key(prefix), tenants_version_key(prefix)],
        [api_keys_key(prefix), api_key_ids_key(prefix)],
    ]


def _relative(prefix: str, key: str) -> str:
    return key[len(prefix) + 1 :]


def _skillbook_keys(client: redis.Redis, keys: SkillbookKeys) -> list[str]:
    """Every key of one skillbook but its nightly lock, compact snapshot and ADDs in flight (transient)."""
    scanned = [
        decode_text(key)
        for pattern in (keys.idempotency_pattern, keys.proposal_signature_pattern)
        for key in client.scan_iter(match=pattern, count=1000)
    ]
    left_out = {keys.nightly_lock, keys.compact_snapshot, keys.additions_in_flight}
    return [key for key in keys.fixed() if key not in left_out] + sorted(scanned)


def _read_group(
    client: redis.Redis, prefix: str, names: list[str], watched: str
) -> list[dict[str, Any]] | None:
    """The records of ``names`` (one hash slot) read in one MULTI while ``watched`` is WATCHed.

    None when the read must start again: ``watched`` moved, or a key changed type (appeared or
    went) between the look at the types and the transaction.
    """
    with client.pipeline(transaction=True) as pipe:
        try:
            watch_keys(pipe, watched)  # also puts the pipeline in immediate mode for the types
            types = [decode_text(pipe.type(name)) for name in names]
            unknown = [(n, t) for n, t in zip(names, types, strict=True) if t not in ("none", *KEY_TYPES)]
            if unknown:
                raise CorruptDataError(unknown[0][0], f"is a {unknown[0][1]}, a type a backup cannot copy")
            pipe.multi()
            for name, key_type in zip(names, types, strict=True):
                pipe.type(name)
                pipe.pttl(name)
                if key_type != "none":
                    queue_read(pipe, name, key_type)
            replies = iter(pipe.execute())
        except WatchError:
            return None
    records = []
    for name, key_type in zip(names, types, strict=True):
        now_type, ttl = decode_text(next(replies)), next(replies)
        if now_type != key_type:
            return None
        if key_type != "none":
            records.append(record_of(_relative(prefix, name), key_type, int(ttl), next(replies)))
    return records


def _read_skillbook(client: redis.Redis, prefix: str, name: str) -> tuple[int, list[dict[str, Any]]]:
    """Skillbook ``name`` at one version: that version and its records.

    Raises:
        VersionConflict: writers moved it during every one of READ_ATTEMPTS reads.
    """
    keys = SkillbookKeys(name, prefix)
    version_key = _relative(prefix, keys.version)
    for attempt in range(READ_ATTEMPTS):
        records = _read_group(client, prefix, _skillbook_keys(client, keys), keys.version)
        if records is not None:
            version = next((r["value"] for r in records if r["key"] == version_key), "0")
            if not (isinstance(version, str) and version.isdigit()):
                raise CorruptDataError(keys.version, f"holds {version!r}, not a whole number")
            return int(version), records
        time.sleep(min(0.001 * 2**attempt, 0.05))  # let the writer finish its burst
    raise VersionConflict(name, READ_ATTEMPTS, "backup")


def _read_fleet(client: redis.Redis, prefix: str) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = []
    for group in _fleet_groups(prefix):
        for _ in range(READ_ATTEMPTS):
            read = _read_group(client, prefix, group, group[0])
            if read is not None:
                records.extend(read)
                break
        else:
            raise VersionConflict("(fleet)", READ_ATTEMPTS, "backup")
    return records


def _write_lines(path: Path, records: list[dict[str, Any]]) -> None:
    with path.open("w", encoding="utf-8") as out:
        for record in records:
            out.write(json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n")
        out.flush()
        os.fsync(out.fileno())


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_backup(client: redis.Redis, prefix: str, out: Path, say: Say) -> dict[str, Any]:
    """Copy the fleet's state under ``prefix`` into the new folder ``out``; its manifest.

    Raises:
        BackupTargetError: ``out`` exists and is not empty.
        VersionConflict: a skillbook kept moving during every read of it.
    """
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise BackupTargetError(str(out))
    partial = out.with_name(out.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)  # a run that died before its rename left it
    partial.mkdir(parents=True)
    try:
        manifest = _write_into(client, prefix, partial, say)
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)  # a failed backup leaves no half folder behind
        raise
    partial.replace(out)  # replaces an empty ``out``, refused above otherwise
    _fsync_dir(out.parent)
    logger.info("backup of prefix %r written to %s: %d skillbooks", prefix, out, len(manifest["skillbooks"]))
    return manifest


def _write_into(client: redis.Redis, prefix: str, partial: Path, say: Say) -> dict[str, Any]:
    """Write every file of a backup into the folder ``partial``, the manifest last and each synced."""
    names = sorted(decode_text(name) for name in client.smembers(registry_key(prefix)))
    books = []
    for name in names:
        version, records = _read_skillbook(client, prefix, name)
        _write_lines(partial / skillbook_file(name), records)
        books.append(
            {"name": name, "version": version, "file": skillbook_file(name), "records": len(records)}
        )
        say(f"skillbook {name}: version {version}, {len(records)} keys")
    fleet = _read_fleet(client, prefix)
    _write_lines(partial / FLEET_FILE, fleet)
    manifest = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "schema_version": SCHEMA_VERSION,
        "ace_workers_version": PROJECT_VERSION,
        "created_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "source_prefix": prefix,
        "skillbooks": books,
        "fleet": {"file": FLEET_FILE, "records": len(fleet)},
        "counts": {
            "skillbooks": len(books),
            "tenants": _fields_of(fleet, _relative(prefix, tenants_key(prefix))),
            "api_keys": _fields_of(fleet, _relative(prefix, api_keys_key(prefix))),
        },
    }
    (partial / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    with (partial / MANIFEST).open("rb") as written:
        os.fsync(written.fileno())
    _fsync_dir(partial)
    return manifest


def _fields_of(records: list[dict[str, Any]], relative: str) -> int:
    return next((len(r["value"]) for r in records if r["key"] == relative), 0)


# -- reading a backup --------------------------------------------------------------------------
Decoded = tuple[str, str, int | None, Any]


@dataclass(frozen=True)
class Backup:
    """A backup folder read and checked: its manifest, each skillbook's records, the fleet's."""

    path: Path
    manifest: dict[str, Any]
    skillbooks: dict[str, list[Decoded]]
    fleet: list[Decoded]


def _field(manifest: Any, name: str, kind: type, where: str) -> Any:
    value = manifest.get(name) if isinstance(manifest, dict) else None
    if not isinstance(value, kind) or isinstance(value, bool):
        raise BackupFormatError(where, None, f"field {name!r} is missing or not a {_kind_name(kind)}")
    return value


_KIND_NAMES: dict[type, str] = {int: "whole number", str: "text", list: "list", dict: "JSON object"}


def _kind_name(kind: type) -> str:
    return _KIND_NAMES.get(kind, "value")


def _read_manifest(folder: Path) -> dict[str, Any]:
    path = folder / MANIFEST
    if not path.is_file():
        raise BackupFormatError(str(path), None, "not found: is this a folder `ace-workers backup` wrote?")
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise BackupFormatError(str(path), exc.lineno, f"not JSON ({exc.msg})") from None
    except UnicodeDecodeError:
        raise BackupFormatError(str(path), None, "not UTF-8 text") from None
    where = str(path)
    if not isinstance(manifest, dict):
        raise BackupFormatError(where, None, f"a JSON object is expected, not {type(manifest).__name__}")
    if _field(manifest, "format", str, where) != FORMAT:
        raise BackupFormatError(where, None, f"field 'format' is {manifest['format']!r}, not {FORMAT!r}")
    if _field(manifest, "format_version", int, where) != FORMAT_VERSION:
        raise BackupFormatError(
            where,
            None,
            f"format version {manifest['format_version']}, this ace-workers reads {FORMAT_VERSION}",
        )
    schema = _field(manifest, "schema_version", int, where)
    if schema != SCHEMA_VERSION:
        raise BackupSchemaError(str(folder), schema, SCHEMA_VERSION)
    _field(manifest, "source_prefix", str, where)
    _check_listing(manifest, where)
    return manifest


def _check_listing(manifest: dict[str, Any], where: str) -> None:
    """Check the manifest's list of skillbooks and its fleet entry."""
    for book in _field(manifest, "skillbooks", list, where):
        name = _field(book, "name", str, where)
        try:
            validate_skillbook_name(name)
        except ValueError as exc:
            raise BackupFormatError(where, None, str(exc)) from None
        if _field(book, "file", str, where) != skillbook_file(name):
            raise BackupFormatError(where, None, f"skillbook {name!r} names file {book['file']!r}")
        _field(book, "version", int, where)
        _field(book, "records", int, where)
    fleet = _field(manifest, "fleet", dict, where)
    if _field(fleet, "file", str, where) != FLEET_FILE:
        raise BackupFormatError(where, None, f"the fleet's file is {fleet['file']!r}, not {FLEET_FILE!r}")
    _field(fleet, "records", int, where)


def _read_records(path: Path, expected: int, allowed: Callable[[str], bool]) -> list[Decoded]:
    """The checked records of one file; BackupFormatError naming the file and line of a bad one."""
    if not path.is_file():
        raise BackupFormatError(str(path), None, "not found (the manifest lists it)")
    records = []
    with path.open("rb") as lines:
        for number, raw in enumerate(lines, start=1):
            try:
                record = decode_record(json.loads(raw))
            except (ValueError, UnicodeDecodeError) as exc:  # JSONDecodeError is a ValueError
                problem = exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc)
                raise BackupFormatError(str(path), number, f"not a backup record ({problem})") from None
            if not allowed(record[0]):
                raise BackupFormatError(str(path), number, f"key {record[0]!r} does not belong in this file")
            records.append(record)
    if len(records) != expected:
        raise BackupFormatError(
            str(path),
            len(records) or None,
            f"holds {len(records)} records, the manifest says {expected}: truncated?",
        )
    return records


def _starts_with(head: str) -> Callable[[str], bool]:
    return lambda key: key.startswith(head)


def load_backup(folder: Path) -> Backup:
    """Read and check the backup in ``folder``, every file whole, before anything is written anywhere.

    Raises:
        BackupFormatError: a file is missing, not JSON, truncated, or holds a key outside its place.
        BackupSchemaError: the backup's schema is not this version's.
    """
    manifest = _read_manifest(folder)
    source = manifest["source_prefix"]
    books = {}
    for book in manifest["skillbooks"]:
        tag = SkillbookKeys(book["name"], "p").hash_tag + ":"
        books[book["name"]] = _read_records(folder / book["file"], book["records"], _starts_with(tag))
    fleet_names = {_relative(source, key) for group in _fleet_groups(source) for key in group}
    fleet = _read_records(folder / FLEET_FILE, manifest["fleet"]["records"], fleet_names.__contains__)
    return Backup(folder, manifest, books, fleet)


# -- restoring ---------------------------------------------------------------------------------
def _first_key(client: redis.Redis, prefix: str) -> str | None:
    """A key under ``prefix`` other than the schema stamp and its lock, or None."""
    ignored = {schema_key(prefix), schema_lock_key(prefix)}
    for key in client.scan_iter(match=f"{prefix}:*", count=1000):
        if decode_text(key) not in ignored:
            return decode_text(key)
    return None


def _existing(client: redis.Redis, prefix: str, names: list[str]) -> list[str]:
    registry = {decode_text(name) for name in client.smembers(registry_key(prefix))}
    return [name for name in names if name in registry or client.exists(SkillbookKeys(name, prefix).version)]


def restore_backup(
    client: redis.Redis, prefix: str, backup: Backup, *, merge: bool, where: str, say: Say
) -> list[str]:
    """Write ``backup`` under ``prefix``: each skillbook in one MULTI, then the fleet; the names restored.

    Without ``merge`` the target must hold no key under ``prefix`` (the schema stamp aside); with
    it, none of the backup's skillbooks, and tenants and API keys the target has are kept.

    Raises:
        RestoreTargetNotEmptyError: data under ``prefix`` and no ``merge``.
        RestoreSkillbooksExistError: ``merge``, and the target has some of the backup's skillbooks.
    """
    names = sorted(backup.skillbooks)
    if not merge:
        found = _first_key(client, prefix)
        if found is not None:
            raise RestoreTargetNotEmptyError(where, prefix, found)
    else:
        clashes = _existing(client, prefix, names)
        if clashes:
            raise RestoreSkillbooksExistError(clashes)
    for name in names:
        records = backup.skillbooks[name]
        with client.pipeline(transaction=True) as pipe:  # one hash slot: one transaction
            for key, key_type, ttl, value in records:
                queue_write(pipe, f"{prefix}:{key}", key_type, ttl, value)
            pipe.execute()
        client.sadd(registry_key(prefix), name)
        say(f"skillbook {name}: {len(records)} keys restored")
    _restore_fleet(client, prefix, backup.fleet, merge=merge)
    say(f"fleet: {len(backup.fleet)} keys restored" + (" (merged)" if merge else ""))
    return names


def _restore_fleet(client: redis.Redis, prefix: str, records: list[Decoded], *, merge: bool) -> None:
    by_key = {key: (key_type, ttl, value) for key, key_type, ttl, value in records}
    for group in _fleet_groups(prefix):
        with client.pipeline(transaction=True) as pipe:  # each group shares one hash slot
            for key in group:
                found = by_key.get(_relative(prefix, key))
                if found is None:
                    continue
                key_type, ttl, value = found
                if not merge:
                    queue_write(pipe, key, key_type, ttl, value)
                elif key_type == "hash":  # what the target has already stays
                    for field, field_value in value:
                        pipe.hsetnx(key, field, field_value)
                elif key_type == "string":  # the tenants' version counter: readers reload
                    pipe.incr(key)
            pipe.execute()

"""Which schema the data under a prefix has, stamped in Redis, and the check every process makes at start.

The data's shape (its keys, their types, the JSON in them) has a number, :data:`SCHEMA_VERSION`,
raised with every change of shape that needs a migration (``store/migrations``). Redis holds
the number of its data in ``PREFIX:schema`` with the ace-workers version that stamped it.

- An empty Redis (no key of :func:`~.keys.lasting_state_keys`) is stamped with this version by
  the first process that opens it: a new deployment, or the embedded Redis of ``learn``.
- Data without a stamp is of schema 0 ("unversioned"): written before schemas were kept.
- A process meeting another schema refuses to start (:func:`check_schema`): a newer one needs
  a newer ace-workers, an older one ``ace-workers migrate``.

The check reads the stamp and the lasting-state keys in one pipeline, once per process start
(the runtime makes it when it is built); steps never look again.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import redis

from ...extras import PROJECT_VERSION
from ..connections import client_url_for, redact_url, store_client
from .errors import CorruptDataError, NewerSchemaError, OlderSchemaError
from .keys import lasting_state_keys, schema_key
from .replies import decode_text

__all__ = [
    "SCHEMA_VERSION",
    "UNVERSIONED",
    "SchemaState",
    "check_schema",
    "read_schema",
    "record_schema",
]

# The schema this code reads and writes; raised (with a migration) whenever stored data changes shape.
SCHEMA_VERSION = 2
# The schema of data written before schemas were kept (no stamp).
UNVERSIONED = 0

# Fields of the schema hash.
FIELD_VERSION = "version"
FIELD_WRITTEN_BY = "written_by"
FIELD_STAMPED_AT = "stamped_at"
FIELD_MIGRATED_AT = "migrated_at"


@dataclass(frozen=True)
class SchemaState:
    """What Redis says of the data under one prefix."""

    version: int  # the stamped schema; UNVERSIONED without a stamp
    written_by: str | None  # the ace-workers version that stamped or last migrated it
    stamped: bool
    empty: bool  # no lasting-state key exists (a stamp alone does not count as data)

    @property
    def is_new(self) -> bool:
        """True for a Redis no process of this prefix wrote to yet: it takes the current schema."""
        return not self.stamped and self.empty


def read_schema(client: redis.Redis, prefix: str) -> SchemaState:
    """The schema stamp and whether any data exists under ``prefix``, in one round trip.

    Raises:
        CorruptDataError: the schema hash holds a version that is not a whole number.
    """
    key = schema_key(prefix)
    # Not a transaction: on a cluster the keys live in several slots, which one pipeline reads.
    with client.pipeline(transaction=False) as pipe:
        pipe.hgetall(key)
        for marker in lasting_state_keys(prefix):
            pipe.exists(marker)
        stamp, *present = pipe.execute()
    fields = {decode_text(name): decode_text(value) for name, value in stamp.items()}
    raw_version = fields.get(FIELD_VERSION)
    empty = not any(present)
    if raw_version is None:
        return SchemaState(UNVERSIONED, None, stamped=False, empty=empty)
    try:
        version = int(raw_version)
    except ValueError:
        raise CorruptDataError(key, f"field {FIELD_VERSION!r} holds {raw_version!r}, not a number") from None
    return SchemaState(version, fields.get(FIELD_WRITTEN_BY), stamped=True, empty=empty)


def record_schema(client: redis.Redis, prefix: str, version: int, *, migrated: bool = False) -> None:
    """Stamp the data under ``prefix`` as of schema ``version``, written by this ace-workers."""
    when = FIELD_MIGRATED_AT if migrated else FIELD_STAMPED_AT
    client.hset(
        schema_key(prefix),
        mapping={FIELD_VERSION: str(version), FIELD_WRITTEN_BY: PROJECT_VERSION, when: f"{time.time():.3f}"},
    )


def _stamp_new(client: redis.Redis, prefix: str) -> int:
    """Stamp a new Redis with SCHEMA_VERSION unless another process stamped it first; the schema it has."""
    key = schema_key(prefix)
    # HSETNX: of two processes starting on one new Redis, one stamps; the other reads its stamp.
    if client.hsetnx(key, FIELD_VERSION, str(SCHEMA_VERSION)):
        client.hset(key, mapping={FIELD_WRITTEN_BY: PROJECT_VERSION, FIELD_STAMPED_AT: f"{time.time():.3f}"})
        return SCHEMA_VERSION
    return read_schema(client, prefix).version


def check_schema(client: redis.Redis, prefix: str, where: str) -> SchemaState:
    """Refuse data of another schema than :data:`SCHEMA_VERSION`; stamp a new Redis with it.

    ``where`` names the Redis in the refusal (a URL without its password).

    Raises:
        NewerSchemaError: the data is of a newer schema (upgrade ace-workers).
        OlderSchemaError: the data is of an older schema, or unversioned (run ``ace-workers migrate``).
    """
    state = read_schema(client, prefix)
    version = _stamp_new(client, prefix) if state.is_new else state.version
    if version > SCHEMA_VERSION:
        raise NewerSchemaError(where, version, SCHEMA_VERSION, PROJECT_VERSION)
    if version < SCHEMA_VERSION:
        raise OlderSchemaError(where, version, SCHEMA_VERSION, PROJECT_VERSION)
    return state if not state.is_new else SchemaState(version, PROJECT_VERSION, stamped=True, empty=True)


def connect_checked(
    url: str, prefix: str, *, checked: bool = True
) -> tuple[redis.Redis, str, SchemaState | None]:
    """A client of the store at ``url``, where it is (the URL without its password), and its data's
    schema, checked (:func:`check_schema`) unless ``checked`` is false (then None). The one way a
    process connects to the store: workers, producers, commands, the console and MCP alike.
    """
    client_url = client_url_for(url)
    client = store_client(client_url)
    where = redact_url(client_url)
    if not checked:
        return client, where, None
    try:
        return client, where, check_schema(client, prefix, where)
    except BaseException:
        client.close()
        raise

"""Every place a text occurs in a Redis (or a Redis Cluster): each key, of each type, read whole.

For ``forget``'s tests: after an erasure a planted marker must be in no key name, no string, no
hash field or value, no list item, no set or sorted-set member, no stream entry's field or value.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import redis

__all__ = ["places_holding"]


def _decoded(value: object) -> bytes:
    if isinstance(value, bytes):
        return value
    return str(value).encode()


def _hash(client: redis.Redis, key: bytes) -> Iterator[tuple[str, bytes]]:
    for field, value in client.hgetall(key).items():  # type: ignore[union-attr]
        yield f"field {field!r}", _decoded(field)
        yield f"value of {field!r}", _decoded(value)


def _list(client: redis.Redis, key: bytes) -> Iterator[tuple[str, bytes]]:
    for position, item in enumerate(client.lrange(key, 0, -1)):  # type: ignore[arg-type]
        yield f"item {position}", _decoded(item)


def _stream(client: redis.Redis, key: bytes) -> Iterator[tuple[str, bytes]]:
    for entry_id, fields in client.xrange(key, "-", "+"):  # type: ignore[union-attr]
        for field, value in fields.items():
            yield f"entry {entry_id!r} field {field!r}", _decoded(field)
            yield f"entry {entry_id!r} value of {field!r}", _decoded(value)


# How each type of key is read whole: (where in the key, a stored text) for each text it holds.
_READERS: dict[str, Callable[[redis.Redis, bytes], Iterator[tuple[str, bytes]]]] = {
    "string": lambda client, key: iter([("value", _decoded(client.get(key) or b""))]),
    "hash": _hash,
    "list": _list,
    "set": lambda client, key: (("member", _decoded(m)) for m in client.smembers(key)),  # type: ignore[union-attr]
    "zset": lambda client, key: (("member", _decoded(m)) for m in client.zrange(key, 0, -1)),  # type: ignore[union-attr]
    "stream": _stream,
    "none": lambda client, key: iter([]),  # expired between SCAN and TYPE: nothing to read
}


def _contents(client: redis.Redis, key: bytes) -> Iterator[tuple[str, bytes]]:
    """(where in the key, a stored text) for every text key ``key`` holds."""
    kind = _decoded(client.type(key)).decode()
    reader = _READERS.get(kind)
    if reader is None:
        raise AssertionError(f"key {key!r} has type {kind!r}, which the scan does not read")
    return reader(client, key)


def places_holding(client: redis.Redis, text: str) -> list[str]:
    """Every key (and where in it) of ``client``'s Redis whose name or content holds ``text``.

    SCAN walks every key (on a cluster, of every master); each is read whole by its type.
    """
    needle = text.encode()
    found = []
    for key in client.scan_iter(count=500):
        name = _decoded(key)
        if needle in name:
            found.append(f"key name {name!r}")
        for where, content in _contents(client, name):
            if needle in content:
                found.append(f"{name!r} {where}")
    return found

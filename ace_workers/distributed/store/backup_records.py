"""One Redis key's logical content as a JSON record, generic over the Redis types: read, check, write.

A record is ``{"key": NAME, "type": TYPE, "ttl_ms": MS or null, "value": ...}`` with NAME relative
to the key prefix. By type the value is: string, a text; hash, ``[[field, value], ...]``; list,
``[item, ...]``; set, ``[member, ...]``; zset, ``[[member, score], ...]``; stream,
``[[entry id, [[field, value], ...]], ...]``. A text is a JSON string where the bytes are UTF-8,
else ``{"base64": "..."}``, so embeddings and other binary values survive the round trip.
"""

from __future__ import annotations

import base64
import binascii
import math
import re
from collections.abc import Callable
from typing import Any

from redis.client import Pipeline

__all__ = ["KEY_TYPES", "decode_record", "queue_read", "queue_write", "record_of"]

# The Redis types a record can hold, each with how to queue its read in a transaction.
_READERS: dict[str, Callable[[Pipeline, str], Any]] = {
    "string": lambda pipe, key: pipe.get(key),
    "hash": lambda pipe, key: pipe.hgetall(key),
    "list": lambda pipe, key: pipe.lrange(key, 0, -1),
    "set": lambda pipe, key: pipe.smembers(key),
    "zset": lambda pipe, key: pipe.zrange(key, 0, -1, withscores=True),
    "stream": lambda pipe, key: pipe.xrange(key),
}
KEY_TYPES = tuple(_READERS)
# A stream entry id as XADD takes an explicit one; checked before the restore's transaction, since
# Redis applies the rest of a MULTI when one command in it fails.
_ENTRY_ID = re.compile(r"[0-9]{1,20}-[0-9]{1,20}")


def queue_read(pipe: Pipeline, key: str, key_type: str) -> None:
    """Queue the read of ``key``'s whole content (it is of ``key_type``) on ``pipe``."""
    _READERS[key_type](pipe, key)


def _text(value: bytes | str) -> str | dict[str, str]:
    raw = value.encode() if isinstance(value, str) else value
    try:
        return raw.decode()
    except UnicodeDecodeError:
        return {"base64": base64.b64encode(raw).decode()}


def _pairs(pairs: Any) -> list[list[Any]]:
    return [[_text(name), _text(value)] for name, value in pairs]


def _entry_fields(fields: Any) -> Any:
    """A stream entry's fields as pairs: a dict from redis-py, or the raw flat list a cluster
    transaction returns (its replies skip redis-py's parsing)."""
    if isinstance(fields, dict):
        return fields.items()
    return zip(fields[::2], fields[1::2], strict=True)


def record_of(relative: str, key_type: str, ttl_ms: int, reply: Any) -> dict[str, Any]:
    """The record of a key named ``relative`` (under the prefix) from its read's ``reply``."""
    value: Any
    if key_type == "string":
        value = _text(reply)
    elif key_type == "hash":
        value = _pairs(sorted(reply.items()))
    elif key_type in ("list", "set"):
        value = [_text(item) for item in (reply if key_type == "list" else sorted(reply))]
    elif key_type == "zset":
        value = [[_text(member), score] for member, score in reply]
    else:  # stream
        value = [[_text(entry_id), _pairs(_entry_fields(fields))] for entry_id, fields in reply]
    # PTTL: -1 no expiry (-2, gone, cannot happen inside the transaction that read it).
    return {"key": relative, "type": key_type, "ttl_ms": ttl_ms if ttl_ms > 0 else None, "value": value}


def _bytes(value: Any, what: str) -> bytes:
    if isinstance(value, str):
        return value.encode()
    if isinstance(value, dict) and set(value) == {"base64"} and isinstance(value["base64"], str):
        try:
            return base64.b64decode(value["base64"], validate=True)
        except binascii.Error:
            raise ValueError(f"{what} is not valid base64") from None
    raise ValueError(f"{what} is {type(value).__name__}, not a text or {{'base64': ...}}")


def _list(value: Any, what: str) -> list[Any]:
    if not isinstance(value, list):
        raise ValueError(f"{what} is {type(value).__name__}, not a list")
    return value


def _pair_list(value: Any, what: str) -> list[tuple[bytes, bytes]]:
    pairs = []
    for item in _list(value, what):
        if not isinstance(item, list) or len(item) != 2:
            raise ValueError(f"{what} holds {item!r:.60}, not a [field, value] pair")
        pairs.append((_bytes(item[0], f"a field of {what}"), _bytes(item[1], f"a value of {what}")))
    return pairs


def decode_record(record: Any) -> tuple[str, str, int | None, Any]:
    """(relative key, type, TTL in ms or None, value as bytes) of a record, checked.

    Raises:
        ValueError: a field is missing or of the wrong shape (the caller adds the file and line).
    """
    if not isinstance(record, dict):
        raise ValueError(f"a record is a JSON object, not {type(record).__name__}")
    key, key_type, ttl, value = (record.get(name) for name in ("key", "type", "ttl_ms", "value"))
    if not isinstance(key, str) or not key:
        raise ValueError("field 'key' is missing or not a text")
    if key_type not in _READERS:
        raise ValueError(f"key {key!r}: field 'type' is {key_type!r}, not one of {', '.join(KEY_TYPES)}")
    if ttl is not None and (not isinstance(ttl, int) or isinstance(ttl, bool) or ttl <= 0):
        raise ValueError(f"key {key!r}: field 'ttl_ms' is {ttl!r}, not a positive whole number or null")
    return key, key_type, ttl, _decode_value(key_type, value, f"key {key!r}'s value")


def _decode_value(key_type: str, value: Any, what: str) -> Any:
    """A record's value as queue_write() takes it: texts as bytes, scores as floats."""
    if key_type == "string":
        return _bytes(value, what)
    if key_type == "hash":
        return _pair_list(value, what)
    if key_type in ("list", "set"):
        return [_bytes(item, f"an item of {what}") for item in _list(value, what)]
    decoded: list[Any] = []
    for item in _list(value, what):
        if key_type == "zset":
            if not (isinstance(item, list) and len(item) == 2 and isinstance(item[1], int | float)):
                raise ValueError(f"{what} holds {item!r:.60}, not a [member, score] pair")
            if not math.isfinite(item[1]):
                raise ValueError(f"{what} holds the score {item[1]!r}, not a finite number")
            decoded.append((_bytes(item[0], f"a member of {what}"), float(item[1])))
        else:
            if not (isinstance(item, list) and len(item) == 2 and isinstance(item[0], str)):
                raise ValueError(f"{what} holds {item!r:.60}, not an [entry id, fields] pair")
            if _ENTRY_ID.fullmatch(item[0]) is None or item[0] == "0-0":
                raise ValueError(f"{what} holds the entry id {item[0]!r:.40}, not one like '12-0'")
            decoded.append((item[0], _pair_list(item[1], f"entry {item[0]} of {what}")))
    return decoded


def queue_write(pipe: Pipeline, key: str, key_type: str, ttl_ms: int | None, value: Any) -> None:
    """Queue the writes that make ``key`` hold ``value`` (decode_record's) on ``pipe``, and its TTL."""
    pipe.delete(key)
    if key_type == "string":
        pipe.set(key, value)
    elif key_type == "hash" and value:
        pipe.hset(key, mapping=dict(value))
    elif key_type == "list" and value:
        pipe.rpush(key, *value)
    elif key_type == "set" and value:
        pipe.sadd(key, *value)
    elif key_type == "zset" and value:
        pipe.zadd(key, {member: score for member, score in value})
    elif key_type == "stream":
        for entry_id, fields in value:
            pipe.xadd(key, dict(fields), id=entry_id)
    if ttl_ms is not None:
        pipe.pexpire(key, ttl_ms)

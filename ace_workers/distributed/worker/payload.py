"""The JSON wire format of a step context, and the claim check that keeps large fields off the broker.

Celery messages carry contexts as plain JSON (never pickle). A payload is::

    {"v": 1,
     "sample": null | {"type": "Sample", "question": ..., "context": ..., "ground_truth": ...,
                       "metadata": {...}, "id": ...}
                    | {"type": "path", "value": "a/b.jsonl", "pathlib": true}
                    | {"type": "dict", "value": {...}},
     "trace": <any JSON value>, "metadata": {...},
     "agent_output": {...} | null, "reflection": {...} | null, "skill_manager_output": {...} | null,
     "epoch": 1, "total_epochs": 1, "step_index": 0, "total_steps": null, "global_sample_index": 0,
     "claimed": []}

The skillbook is not in it: a worker rebuilds the view from the Redis store.
The role outputs travel as ``model_dump(mode="json")``, which leaves out their
``raw`` field (the LLM client's raw response and usage): it comes back empty,
but for the keys of :data:`KEPT_RAW_KEYS` (the Recursive Reflector's
``rr_trace``, which RROpikStep and tracing read in a later step's task).
``trace`` and ``metadata`` must be JSON values that come back unchanged, so
tuples, sets, non-string keys, NaN and other objects are refused with the
path of the first offender (e.g. ``trace['steps'][3] is a set``).

With a :class:`ClaimCheck`, a ``sample`` or ``trace`` whose JSON is larger
than its threshold is stored in Redis and replaced by ``{"claim": key,
"bytes": n}``; its name is listed in ``claimed``.

A payload may have been crafted by whoever can write to the broker, so a worker
trusts none of it: a claim reference must be exactly a claim key
(``PREFIX:claim:<sha256>``) and what is read under it must hash to that digest,
and a trace larger than ACE_MAX_TRACE_BYTES, inline or claimed, is refused (a
claimed one by its length in Redis, before it is read).
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable, Mapping
from dataclasses import fields
from pathlib import Path, PurePath
from typing import Any, Final, TypeVar

import redis
from pydantic import BaseModel
from pydantic import ValidationError as PydanticValidationError
from pydantic_core import PydanticSerializationError
from redis.exceptions import ResponseError

from ...core.context import ACEStepContext, SkillbookView
from ...core.environments import Sample
from ...core.outputs import AgentOutput, ReflectorOutput, SkillManagerOutput
from ..settings import env_name
from ..store.keys import claim_digest, claim_key
from .errors import ClaimMissing, PayloadError, PayloadTooLarge

__all__ = [
    # the wire format
    "FORMAT_VERSION",
    "context_to_payload",
    "payload_to_context",
    "check_trace",
    "find_non_json",
    "KEPT_RAW_KEYS",
    # the claim check
    "ClaimCheck",
]

FORMAT_VERSION: Final = 1

# The fields that can be big enough to claim; the rest are small by construction.
CLAIMABLE_FIELDS: Final = ("sample", "trace")

_INT_FIELDS: Final = ("epoch", "total_epochs", "step_index", "global_sample_index")

_OUTPUT_MODELS: Final[dict[str, type[BaseModel]]] = {
    "agent_output": AgentOutput,
    "reflection": ReflectorOutput,
    "skill_manager_output": SkillManagerOutput,
}

# Keys of an output's ``raw`` that later steps read, so they cross the queue hop with it.
KEPT_RAW_KEYS: Final = ("rr_trace",)

_Model = TypeVar("_Model", bound=BaseModel)

_JSON_TYPES = "dict with str keys, list, str, int, finite float, bool or None"


# --- JSON checks -------------------------------------------------------------------------------


def find_non_json(value: object, root: str) -> tuple[str, str] | None:
    """The path of the first part of ``value`` JSON cannot carry unchanged, and what it is; or None.

    Stricter than ``json.dumps``: a tuple or a non-str key would be accepted
    there but come back as a list or a str, so it is reported too.
    """
    try:
        return _problem(value, root, set())
    except RecursionError:
        return root, "is nested too deeply to encode"


def _problem(value: object, path: str, open_ids: set[int]) -> tuple[str, str] | None:
    if value is None or isinstance(value, (str, int)):  # bool is an int
        return None
    if isinstance(value, float):
        return None if math.isfinite(value) else (path, f"is {value!r}, which JSON does not allow")
    if isinstance(value, (dict, list)):
        return _container_problem(value, path, open_ids)
    if isinstance(value, tuple):
        return path, "is a tuple, which JSON turns into a list; use a list"
    return path, f"is a {type(value).__qualname__}, which JSON cannot encode"


def _container_problem(
    value: dict[Any, Any] | list[Any], path: str, open_ids: set[int]
) -> tuple[str, str] | None:
    if id(value) in open_ids:
        return path, "contains itself (a circular reference)"
    open_ids.add(id(value))
    try:
        if isinstance(value, list):
            for index, item in enumerate(value):
                found = _problem(item, f"{path}[{index}]", open_ids)
                if found is not None:
                    return found
            return None
        for key, item in value.items():
            if not isinstance(key, str):
                return path, f"has a {type(key).__qualname__} key {key!r}; JSON object keys are strings"
            found = _problem(item, f"{path}[{key!r}]", open_ids)
            if found is not None:
                return found
        return None
    finally:
        open_ids.discard(id(value))


def _checked_json(value: object, root: str, field: str) -> bytes:
    """``value``'s JSON, once known to decode back to an equal value; else PayloadError with the path."""
    # The C encoder and one comparison are several times faster than walking the value in Python,
    # so the walk only runs to explain a failure.
    try:
        data = _encode(value)
        if json.loads(data) == value:
            return data
    except (TypeError, ValueError):
        pass
    except RecursionError:
        raise PayloadError(
            f"{root} is nested too deeply to travel as JSON (Python's recursion limit)",
            field=field,
            path=root,
        ) from None
    path, what = find_non_json(value, root) or (root, "does not come back unchanged from JSON")
    raise PayloadError(
        f"{path} {what}; a step context travels as JSON ({_JSON_TYPES})", field=field, path=path
    )


def _encode(value: object) -> bytes:
    # ASCII escapes: no lone surrogate can break the UTF-8 encoding, and the size is what travels.
    return json.dumps(value, allow_nan=False, separators=(",", ":")).encode("ascii")


def check_trace(trace: object, *, max_bytes: int) -> int:
    """Check a trace before it is enqueued: not null, JSON all the way down, at most ``max_bytes``; its size.

    Raises:
        PayloadError: a null trace, one nested too deeply, or naming the first value that is not JSON.
        PayloadTooLarge: with the trace's size and the limit.
    """
    if trace is None:
        raise PayloadError("trace is null: a trace is any JSON value but null", field="trace", path="trace")
    size = len(_checked_json(trace, "trace", "trace"))
    if size > max_bytes:
        raise PayloadTooLarge(
            f"trace is {size:,} bytes as JSON, above the limit of {max_bytes:,} bytes; "
            "split it or raise the limit",
            field="trace",
            size=size,
            limit=max_bytes,
        )
    return size


# --- the claim check ---------------------------------------------------------------------------


class ClaimCheck:
    """Keeps large payload fields in Redis and puts a reference in the message instead.

    A claim lives ``ttl_seconds`` after the last time a payload carrying it was
    encoded (SET EX, refreshed on reuse): that is how long a message may wait
    in a queue. Claims are never deleted on read, so a redelivered task still
    finds its value; the TTL reclaims them. Keys are content-addressed, so the
    same value encoded again by the next step is stored once.
    """

    def __init__(
        self,
        redis: redis.Redis,
        *,
        threshold_bytes: int,
        ttl_seconds: int,
        prefix: str = "ace",
    ) -> None:
        if isinstance(threshold_bytes, bool) or not isinstance(threshold_bytes, int) or threshold_bytes < 0:
            raise ValueError(f"threshold_bytes must be an int >= 0, got {threshold_bytes!r}")
        if isinstance(ttl_seconds, bool) or not isinstance(ttl_seconds, int) or ttl_seconds < 1:
            raise ValueError(f"ttl_seconds must be an int >= 1, got {ttl_seconds!r}")
        self.redis = redis
        self.threshold_bytes = threshold_bytes
        self.ttl_seconds = ttl_seconds
        self.prefix = prefix

    def key_for(self, data: bytes) -> str:
        """The Redis key ``data`` is stored under."""
        return claim_key(self.prefix, hashlib.sha256(data).hexdigest())

    def put(self, data: bytes) -> str:
        """Store ``data`` for ``ttl_seconds`` and return its key."""
        key = self.key_for(data)
        # Already there (the previous step stored the same value): extend its life, skip the upload.
        if not self.redis.expire(key, self.ttl_seconds):
            self.redis.set(key, data, ex=self.ttl_seconds)
        return key

    def digest_of(self, key: str) -> str | None:
        """The SHA-256 ``key`` names if it is exactly one of this check's keys, else None."""
        return claim_digest(self.prefix, key)

    def size(self, key: str) -> int:
        """The length of the value under claim ``key`` (STRLEN: not loaded); 0 once it expired."""
        return int(self.redis.strlen(self._checked(key)))

    def get(self, key: str) -> bytes | None:
        """The data stored under claim ``key``, or None once it has expired."""
        data = self.redis.get(self._checked(key))
        return data.encode() if isinstance(data, str) else data

    def _checked(self, key: str) -> str:
        # A key comes from a message: through this class, no other key of the store is ever read.
        if self.digest_of(key) is None:
            raise ValueError(f"{key!r} is not a claim key ({self.prefix}:claim:<sha256>)")
        return key

    def claim_if_large(self, data: bytes) -> dict[str, Any] | None:
        """``{"claim": key, "bytes": n}`` after storing ``data`` (JSON) if above the threshold, else None."""
        if len(data) <= self.threshold_bytes:
            return None
        return {"claim": self.put(data), "bytes": len(data)}

    def __repr__(self) -> str:
        return (
            f"ClaimCheck(prefix={self.prefix!r}, threshold_bytes={self.threshold_bytes}, "
            f"ttl_seconds={self.ttl_seconds})"
        )


# --- context -> payload ------------------------------------------------------------------------


def context_to_payload(ctx: ACEStepContext, *, claims: ClaimCheck | None = None) -> dict[str, Any]:
    """The JSON-serialisable payload of ``ctx``, without its skillbook.

    With ``claims``, a sample or trace larger than its threshold is stored in
    Redis and the payload carries a reference to it.

    Raises:
        PayloadError: a field cannot travel as JSON; the message names the path inside it.
    """
    payload: dict[str, Any] = {"v": FORMAT_VERSION, "sample": _encode_sample(ctx.sample)}
    encoded: dict[str, bytes] = {}
    if ctx.trace is not None:
        encoded["trace"] = _checked_json(ctx.trace, "trace", "trace")
    payload["trace"] = ctx.trace
    for name in _OUTPUT_MODELS:
        payload[name] = _encode_output(name, getattr(ctx, name))
    for name in _INT_FIELDS:
        payload[name] = _int(name, getattr(ctx, name))
    payload["total_steps"] = _optional_int("total_steps", ctx.total_steps)
    metadata = dict(ctx.metadata)
    _checked_json(metadata, "metadata", "metadata")
    payload["metadata"] = metadata
    payload["claimed"] = _claim_large_fields(payload, encoded, claims) if claims is not None else []
    return payload


def _encode_sample(sample: object) -> dict[str, Any] | None:
    if sample is None:
        return None
    # Exactly Sample: a subclass would come back as a plain Sample, losing its type and extra fields.
    if type(sample) is Sample:
        value = {f.name: getattr(sample, f.name) for f in fields(Sample)}
        _checked_json(value, "sample", "sample")
        return {"type": "Sample", **value}
    if isinstance(sample, (str, PurePath)):
        return {"type": "path", "value": str(sample), "pathlib": isinstance(sample, PurePath)}
    if isinstance(sample, dict):
        _checked_json(sample, "sample", "sample")
        return {"type": "dict", "value": sample}
    raise PayloadError(
        f"sample is a {type(sample).__qualname__}; a step context travels as JSON and can carry "
        "a Sample, a str or pathlib path, or a dict of JSON values",
        field="sample",
    )


def _encode_output(name: str, value: object) -> dict[str, Any] | None:
    if value is None:
        return None
    model = _OUTPUT_MODELS[name]
    if not isinstance(value, model):
        raise PayloadError(
            f"{name} is a {type(value).__qualname__}, expected {model.__name__} or None", field=name
        )
    try:
        dumped = value.model_dump(mode="json")
    except PydanticSerializationError as exc:
        raise PayloadError(f"{name} cannot be encoded as JSON: {exc}", field=name) from exc
    raw: dict[str, Any] = getattr(value, "raw", {})  # every role output has one
    kept = {key: raw[key] for key in KEPT_RAW_KEYS if key in raw}
    if kept:
        dumped["raw"] = kept  # model_validate sets it back on the other side
    _checked_json(dumped, name, name)
    return dumped


def _int(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise PayloadError(f"{name} must be an int, got {type(value).__qualname__}", field=name)
    return value


def _optional_int(name: str, value: object) -> int | None:
    return None if value is None else _int(name, value)


def _claim_large_fields(payload: dict[str, Any], encoded: dict[str, bytes], claims: ClaimCheck) -> list[str]:
    claimed = []
    for name in CLAIMABLE_FIELDS:
        if payload[name] is None:
            continue
        # The trace was encoded when it was checked; a sample envelope is small to encode again.
        data = encoded.get(name) or _encode(payload[name])
        ref = claims.claim_if_large(data)
        if ref is not None:
            payload[name] = ref
            claimed.append(name)
    return claimed


# --- payload -> context ------------------------------------------------------------------------


def payload_to_context(
    payload: Mapping[str, Any],
    *,
    skillbook: SkillbookView | None,
    claims: ClaimCheck | None = None,
    max_trace_bytes: int | None = None,
) -> ACEStepContext:
    """The step context ``payload`` was made from, carrying ``skillbook``.

    Claimed fields are fetched from Redis through ``claims`` and left there, each
    only from a claim key and only if it hashes to the key's digest. With
    ``max_trace_bytes`` (a worker passes ACE_MAX_TRACE_BYTES), a larger trace is
    refused, a claimed one before it is read.

    Raises:
        PayloadError: unknown format version, a malformed field, a claim without ``claims``, a claim
            reference that is not a claim key, or a claimed value that does not match its digest.
        PayloadTooLarge: the trace, inline or claimed, is larger than ``max_trace_bytes``.
        ClaimMissing: a claimed value has expired.
    """
    if not isinstance(payload, Mapping):
        raise PayloadError(f"a payload is a JSON object, got {type(payload).__qualname__}", field="v")
    version = payload.get("v")
    if isinstance(version, bool) or version != FORMAT_VERSION:
        raise PayloadError(
            f"payload format version {version!r} is not supported; this ace-workers reads "
            f"version {FORMAT_VERSION} (are producers and workers running the same release?)",
            field="v",
        )
    values = _unclaim(payload, claims, max_trace_bytes)
    if max_trace_bytes is not None and "trace" not in (payload.get("claimed") or []):
        _check_inline_trace(_field(values, "trace"), max_trace_bytes)
    metadata = _field(values, "metadata")
    if not isinstance(metadata, dict):
        raise PayloadError(
            f"metadata must be a JSON object, got {type(metadata).__qualname__}", field="metadata"
        )
    return ACEStepContext(
        sample=_decode_sample(_field(values, "sample")),
        skillbook=skillbook,
        trace=_field(values, "trace"),
        agent_output=_decode_output(values, "agent_output", AgentOutput),
        reflection=_decode_output(values, "reflection", ReflectorOutput),
        skill_manager_output=_decode_output(values, "skill_manager_output", SkillManagerOutput),
        epoch=_int("epoch", _field(values, "epoch")),
        total_epochs=_int("total_epochs", _field(values, "total_epochs")),
        step_index=_int("step_index", _field(values, "step_index")),
        total_steps=_optional_int("total_steps", _field(values, "total_steps")),
        global_sample_index=_int("global_sample_index", _field(values, "global_sample_index")),
        metadata=metadata,
    )


def _field(values: Mapping[str, Any], name: str) -> Any:
    try:
        return values[name]
    except KeyError:
        raise PayloadError(f"payload has no {name!r} field", field=name) from None


def _unclaim(
    payload: Mapping[str, Any], claims: ClaimCheck | None, max_trace_bytes: int | None
) -> Mapping[str, Any]:
    claimed = payload.get("claimed") or []
    if not claimed:
        return payload
    if not isinstance(claimed, list):
        raise PayloadError(
            f"claimed must be a list of field names, got {type(claimed).__qualname__}", field="claimed"
        )
    values = dict(payload)
    for name in claimed:
        if name not in CLAIMABLE_FIELDS:
            raise PayloadError(
                f"payload claims field {_preview(name)}, which is never claimed", field="claimed"
            )
        limit = max_trace_bytes if name == "trace" else None
        values[name] = _fetch_claim(name, _field(payload, name), claims, limit)
    return values


def _fetch_claim(name: str, ref: object, claims: ClaimCheck | None, max_bytes: int | None) -> Any:
    key = ref.get("claim") if isinstance(ref, dict) else None
    if not isinstance(key, str):
        raise PayloadError(
            f"{name} is listed as claimed but holds no claim reference: {_preview(ref)}", field=name
        )
    if claims is None:
        raise PayloadError(
            f"{name} is stored in Redis under {key!r} (claim check), but no ClaimCheck was given to fetch it",
            field=name,
        )
    digest = claims.digest_of(key)
    if digest is None:
        # Refused unread: a reference to any other key would make the worker read that key.
        raise PayloadError(
            f"{name}'s claim reference {_preview(key)} is not a claim key "
            f"({claims.prefix}:claim:<64 hex digits of SHA-256>); it was not read",
            field=name,
        )
    declared = ref.get("bytes") if isinstance(ref, dict) else None
    if max_bytes is not None and isinstance(declared, int) and not isinstance(declared, bool):
        _check_size(name, declared, max_bytes, "as its claim reference says")
    data = _read_claim(name, key, claims, max_bytes)
    if hashlib.sha256(data).hexdigest() != digest:
        raise PayloadError(
            f"claim {key!r} holding {name} does not hash to its key's SHA-256: it was not written "
            "by a producer or worker of ours; refused",
            field=name,
        )
    return json.loads(data)


def _read_claim(name: str, key: str, claims: ClaimCheck, max_bytes: int | None) -> bytes:
    """The bytes under claim ``key``; with ``max_bytes``, their length is checked before they are loaded."""
    try:
        size = claims.size(key)
    except ResponseError as exc:  # WRONGTYPE: something else was written under a claim key
        raise PayloadError(f"claim {key!r} holding {name} is not a string: {exc}", field=name) from exc
    if max_bytes is not None:
        _check_size(name, size, max_bytes, "in Redis")
    data = claims.get(key) if size else None
    if data is None:
        raise ClaimMissing(
            f"claim {key!r} holding {name} is not in Redis: it expired (claims live {claims.ttl_seconds} s "
            "after they were last written) or was written to another Redis",
            field=name,
            key=key,
        )
    if max_bytes is not None:
        _check_size(name, len(data), max_bytes, "in Redis")  # rewritten between STRLEN and GET
    return data


def _check_inline_trace(trace: object, max_bytes: int) -> None:
    if trace is None:
        return
    try:
        size = len(_encode(trace))
    except (TypeError, ValueError, RecursionError) as exc:
        raise PayloadError(f"trace cannot be measured as JSON: {exc}", field="trace", path="trace") from exc
    _check_size("trace", size, max_bytes, "in the message")


def _check_size(name: str, size: int, max_bytes: int, where: str) -> None:
    if size > max_bytes:
        raise PayloadTooLarge(
            f"{name} is {size:,} bytes as JSON ({where}), above the limit of {max_bytes:,} bytes "
            f"({env_name('max_trace_bytes')}); refused",
            field=name,
            size=size,
            limit=max_bytes,
        )


# Any, not ACESample: the context's field is typed for steps that read a Sample, but pipelines
# that start from a file (LoadTracesStep) carry a path or a dict there.
def _decode_sample(value: object) -> Any:
    if value is None:
        return None
    kind = value.get("type") if isinstance(value, dict) else None
    decode = _SAMPLE_DECODERS.get(kind) if isinstance(kind, str) else None
    if decode is None or not isinstance(value, dict):
        raise PayloadError(f"sample has an unknown encoding: {_preview(value)}", field="sample")
    try:
        return decode(value)
    except (TypeError, KeyError) as exc:
        raise PayloadError(f"sample of type {kind!r} is malformed: {exc}", field="sample") from exc


def _decode_sample_dataclass(value: dict[str, Any]) -> Sample:
    return Sample(**{k: v for k, v in value.items() if k != "type"})


def _decode_path(value: dict[str, Any]) -> str | Path:
    path = value["value"]
    if not isinstance(path, str):
        raise TypeError(f"value is a {type(path).__qualname__}, not a str")
    return Path(path) if value.get("pathlib") else path


def _decode_dict(value: dict[str, Any]) -> dict[str, Any]:
    inner = value["value"]
    if not isinstance(inner, dict):
        raise TypeError(f"value is a {type(inner).__qualname__}, not a dict")
    return inner


_SAMPLE_DECODERS: Final[dict[str, Callable[[dict[str, Any]], object]]] = {
    "Sample": _decode_sample_dataclass,
    "path": _decode_path,
    "dict": _decode_dict,
}


def _decode_output(values: Mapping[str, Any], name: str, model: type[_Model]) -> _Model | None:
    value = _field(values, name)
    if value is None:
        return None
    try:
        return model.model_validate(value)
    except PydanticValidationError as exc:
        first = exc.errors()[0]
        location = ".".join(str(part) for part in first["loc"]) or "(top level)"
        raise PayloadError(
            f"{name} is not a valid {model.__name__}: {location}: {first['msg']}", field=name
        ) from exc


def _preview(value: object, limit: int = 120) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."

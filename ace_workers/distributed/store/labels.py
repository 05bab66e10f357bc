"""Labelled versions of a skillbook: names (``prod``, ``canary``, any) that point at versions.

Learning always writes the head; a reader given a label (``support@prod``)
serves the version the label points at, so a known-good version keeps serving
while the head moves on. A move is a compare-and-set on the labels hash, run
by the store's retry loop, and is logged, with its actor, note and the
evaluation that justified it, in the label log stream, in the same transaction.
"""

from __future__ import annotations

import itertools
import json
import logging
from dataclasses import dataclass
from typing import Any

import redis
from redis.client import Pipeline

from ...core.skill import utc_now
from .errors import LabelMovedError, UnknownLabelError, VersionRangeError
from .keys import SkillbookKeys
from .label_names import HEAD, SkillbookRef, parse_skillbook_ref, validate_label
from .replies import decode_int, decode_text, reading, stream_newest_first
from .transactions import CompareAndSet

__all__ = [
    "HEAD",
    "LabelMove",
    "SkillbookLabels",
    "SkillbookRef",
    "parse_skillbook_ref",
    "validate_label",
]

logger = logging.getLogger(__name__)

_UNSET = object()


@dataclass(frozen=True)
class LabelMove:
    """One move of a label, as the label log recorded it (``from_version`` None: newly set)."""

    label: str
    from_version: int | None
    to_version: int | None  # None: the label was deleted
    actor: str
    note: str
    time: str
    evaluation: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        """The move as a JSON object."""
        return {
            "label": self.label,
            "from_version": self.from_version,
            "to_version": self.to_version,
            "actor": self.actor,
            "note": self.note,
            "time": self.time,
            "evaluation": self.evaluation,
        }


class SkillbookLabels:
    """The labels of one skillbook in Redis: read, moved by compare-and-set, logged."""

    def __init__(
        self, client: redis.Redis, keys: SkillbookKeys, cas: CompareAndSet, *, kept: int = 1000
    ) -> None:
        self._redis = client
        self.keys = keys
        self._cas = cas
        self.kept = kept  # newest moves the log keeps (approximately: MAXLEN ~); 0 keeps all

    def get(self, label: str) -> int | None:
        """The version ``label`` points at, or None if the skillbook has no such label."""
        with reading(self.keys.labels):
            raw = self._redis.hget(self.keys.labels, validate_label(label))
        return None if raw is None else decode_int(raw, self.keys.labels)

    def require(self, label: str) -> int:
        """The version ``label`` points at; UnknownLabelError (naming the labels there are) if none."""
        version = self.get(label)
        if version is None:
            raise UnknownLabelError(self.keys.name, label, sorted(self.all()))
        return version

    def all(self) -> dict[str, int]:
        """Every label and the version it points at, sorted by label."""
        with reading(self.keys.labels):
            raw = self._redis.hgetall(self.keys.labels)
        return {
            decode_text(k): decode_int(v, self.keys.labels)
            for k, v in sorted(raw.items(), key=lambda kv: decode_text(kv[0]))
        }

    def set(
        self,
        label: str,
        version: int,
        *,
        actor: str,
        note: str = "",
        evaluation: dict[str, Any] | None = None,
        expect: Any = _UNSET,
    ) -> LabelMove:
        """Point ``label`` at ``version`` (1 .. the current version) and log the move; return it.

        ``expect`` (a version, or None for "not set yet") makes the move conditional:
        LabelMovedError when the label is elsewhere, so two promotions never
        overwrite each other unseen. Raises VersionRangeError for a version the
        skillbook does not have.
        """
        validate_label(label)
        if isinstance(version, bool) or not isinstance(version, int) or version < 1:
            raise VersionRangeError(
                f"skillbook {self.keys.name!r}: a label points at a version >= 1, got {version!r}",
                name=self.keys.name,
                current=-1,
                requested=(version,) if isinstance(version, int) else (),
            )
        return self._move(label, version, actor, note, evaluation, expect)

    def delete(self, label: str, *, actor: str, note: str = "", expect: Any = _UNSET) -> LabelMove:
        """Remove ``label`` (readers of it then fail, naming it) and log it; UnknownLabelError if absent.

        ``expect`` (the version the label was seen at): LabelMovedError when it is elsewhere.
        """
        self.require(label)
        return self._move(label, None, actor, note, None, expect)

    def history(self, label: str | None = None, limit: int = 50) -> list[LabelMove]:
        """The last ``limit`` label moves (of ``label`` only, if given), newest first."""
        if label is not None:
            validate_label(label)
        moves = (_decode_move(fields) for _, fields in stream_newest_first(self._redis, self.keys.label_log))
        return list(itertools.islice((m for m in moves if label is None or m.label == label), limit))

    def _move(
        self,
        label: str,
        version: int | None,
        actor: str,
        note: str,
        evaluation: dict[str, Any] | None,
        expect: Any,
    ) -> LabelMove:
        return self._cas(
            f"moving label {label!r}",
            lambda pipe: self._attempt(pipe, label, version, actor, note, evaluation, expect),
        )

    def _attempt(
        self,
        pipe: Pipeline,
        label: str,
        version: int | None,
        actor: str,
        note: str,
        evaluation: dict[str, Any] | None,
        expect: Any,
    ) -> LabelMove:
        keys = self.keys
        pipe.watch(keys.labels, keys.version)  # type: ignore[no-untyped-call]
        current = decode_int(pipe.get(keys.version), keys.version)
        raw = pipe.hget(keys.labels, label)
        found = None if raw is None else decode_int(raw, keys.labels)
        if expect is not _UNSET and expect != found:
            raise LabelMovedError(keys.name, label, expect, found)
        if version is not None and version > current:
            raise VersionRangeError(
                f"skillbook {keys.name!r}: cannot point label {label!r} at version {version}, "
                f"the current version is {current}",
                name=keys.name,
                current=current,
                requested=(version,),
            )
        move = LabelMove(label, found, version, actor, note, utc_now(), evaluation)
        pipe.multi()
        if version is None:
            pipe.hdel(keys.labels, label)
        else:
            pipe.hset(keys.labels, label, version)
        pipe.xadd(
            keys.label_log,
            {"move": json.dumps(move.to_dict(), ensure_ascii=False)},
            maxlen=self.kept or None,
            approximate=True,
        )
        pipe.execute()
        logger.info(
            "skillbook %r: label %r moved from %s to %s by %s", keys.name, label, found, version, actor
        )
        return move


def _decode_move(fields: Any) -> LabelMove:
    raw = {decode_text(k): decode_text(v) for k, v in dict(fields).items()}
    data = json.loads(raw["move"])
    return LabelMove(
        label=str(data["label"]),
        from_version=data.get("from_version"),
        to_version=data.get("to_version"),
        actor=str(data.get("actor", "")),
        note=str(data.get("note", "")),
        time=str(data.get("time", "")),
        evaluation=data.get("evaluation"),
    )

"""The record of a skillbook's evaluations: the newest reports, as JSON, in a bounded list.

An evaluation reads a skillbook and changes nothing in it, so recording one does not
bump the version: the report is pushed and the list trimmed in one MULTI/EXEC, and a
reader sees the list with or without it, never half of it. Promotions also carry their
evaluation in the label log (labels.py); this list holds every evaluation, refused ones too.
"""

from __future__ import annotations

import json
from typing import Any

import redis

from .errors import CorruptDataError
from .keys import SkillbookKeys
from .replies import decode_json, reading

__all__ = ["EVALUATIONS_KEPT", "SkillbookEvaluations"]

EVALUATIONS_KEPT = 200  # reports kept per skillbook, newest first


class SkillbookEvaluations:
    """The evaluation reports of one skillbook in Redis, newest first."""

    def __init__(self, client: redis.Redis, keys: SkillbookKeys, *, kept: int = EVALUATIONS_KEPT) -> None:
        if isinstance(kept, bool) or not isinstance(kept, int) or kept < 0:
            raise ValueError(f"kept must be an int of at least 0 (0 keeps all), got {kept!r}")
        self._redis = client
        self.keys = keys
        self.kept = kept

    def record(self, report: dict[str, Any]) -> None:
        """Push ``report`` (a JSON object) as the newest; the oldest beyond ``kept`` (0: none) go."""
        text = json.dumps(report, ensure_ascii=False)
        with self._redis.pipeline(transaction=True) as pipe:
            pipe.lpush(self.keys.evaluations, text)
            if self.kept:
                pipe.ltrim(self.keys.evaluations, 0, self.kept - 1)
            pipe.execute()

    def recent(self, limit: int = 20) -> list[dict[str, Any]]:
        """The newest ``limit`` reports, newest first; CorruptDataError names a report that is not JSON."""
        with reading(self.keys.evaluations):
            raw = self._redis.lrange(self.keys.evaluations, 0, max(0, limit - 1))
        reports = [decode_json(item, self.keys.evaluations) for item in raw]
        if not all(isinstance(report, dict) for report in reports):
            raise CorruptDataError(self.keys.evaluations, "holds a report that is not a JSON object")
        return reports

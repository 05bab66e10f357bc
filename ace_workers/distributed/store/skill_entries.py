"""The change-log entries that touched one skill, newest first, without moving a big entry's images.

A skill's page (provenance_reader.py) scans the newest entries for the versions
that touched the skill. An import of 100,000 skills is one entry of some 50 MB:
read whole, its reply alone took the client 0.3-0.7 s on every view of any of
its skills. ``skill_entries.lua`` cuts such an entry's images in Redis to the
skill's part, so the reply is the size of one skill; an entry it cannot cut
cleanly (see the script) comes whole and is read as before. The price is Redis's:
the script copies the entry into Lua and searches it, some 0.2-0.5 s of the server's
time per view on a loaded 2-core machine, against 0.04-0.09 s to send it whole.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from typing import Any

import redis

from ..lua import read_lua
from .changelog import BIG_IMAGES, ChangeRecord
from .replies import STREAM_PAGE, optional_text, reading
from .transactions import records_touching

__all__ = ["changes_touching"]

_SCRIPT = read_lua(__name__, "skill_entries.lua")


def changes_touching(client: redis.Redis, key: str, skill_id: str, limit: int) -> list[ChangeRecord]:
    """Of the newest ``limit`` entries of change log ``key``, those that touched ``skill_id``, cut to it."""
    entries = itertools.islice(_entries(client, key, skill_id, page=min(STREAM_PAGE, limit)), limit)
    return records_touching(entries, key, skill_id)


def _entries(client: redis.Redis, key: str, skill_id: str, *, page: int) -> Iterator[tuple[Any, Any]]:
    """The entries ``(id, fields)`` newest first, a big one's images cut to the skill's where that is sure."""
    script = client.register_script(_SCRIPT)
    spelled = json.dumps(skill_id, ensure_ascii=False)
    # An id a writer could also spell with escapes is never cut: its key may stand either way.
    cut_key = f"{spelled}:" if spelled == json.dumps(skill_id) else ""
    newest = "+"
    while True:
        with reading(key):
            entries = script(keys=[key], args=[newest, page, BIG_IMAGES, cut_key]) or []
        for entry_id, fields, cut in entries:
            if cut and not _holds_only(fields, skill_id):
                with reading(key):  # a nested key or a value of another kind: read as it always was
                    whole: list[Any] = client.xrange(key, min=entry_id, max=entry_id) or []
                if not whole:
                    continue  # trimmed from the log meanwhile, as a read a moment later would find
                (entry_id, fields), *_ = whole
            yield entry_id, fields
        if len(entries) < page:
            return
        newest = "(" + str(optional_text(entries[-1][0]))


def _holds_only(fields: list[Any], skill_id: str) -> bool:
    """True when each cut side is {} or the skill's own image (or null) under its id."""
    for name, value in zip(fields[::2], fields[1::2], strict=True):
        if optional_text(name) not in ("before", "after"):
            continue
        try:
            part = json.loads(value)
        except ValueError:  # not JSON: the whole entry is read, and refused naming the key if it is bad
            return False
        if part == {}:
            continue
        image = part.get(skill_id, False) if isinstance(part, dict) and len(part) == 1 else False
        if not (image is None or (isinstance(image, dict) and image.get("id") == skill_id)):
            return False
    return True

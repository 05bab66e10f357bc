"""What the history area's views share: version references, diffs side by side, change-log entries."""

from __future__ import annotations

from typing import Any

from ....distributed.store.change_digest import ChangeDigest
from ....distributed.store.change_summary import UNTOLD_FIELDS, change_actor, skill_changes
from ....distributed.store.errors import InvalidLabelError
from ....distributed.store.label_names import HEAD, validate_label
from ....distributed.store.store import RedisSkillbookStore
from ...errors import BadRequestError
from ...views import View

__all__ = [
    "diff_between",
    "expected_version",
    "labels_by_version",
    "resolve_version",
    "shown_rows",
    "summary_of",
    "timeline_entry",
]

DEFAULT_SHOWN, MAX_SHOWN = 500, 100_000  # skills a diff lists (?limit=)
# The fields a diff shows first, in this order; any other told field follows, sorted.
_FIELD_ORDER = ("content", "section", "status", "helpful", "harmful", "neutral", "pinned", "archive_info")


def resolve_version(store: RedisSkillbookStore, raw: str, param: str, *, head: int, minimum: int = 0) -> int:
    """The version ``raw`` names: a number (``minimum`` .. head), ``head``, or a label's name.

    BadRequestError naming ``param`` for a malformed or out-of-range one;
    UnknownLabelError (404) naming the labels there are for a label not set.
    """
    raw = raw.strip()
    if not raw:
        raise BadRequestError(f"{param} is missing: give a version number, {HEAD!r} or a label")
    if raw == HEAD:
        return head
    if raw.isdigit():
        version = int(raw)
        if not minimum <= version <= head:
            raise BadRequestError(
                f"{param}={version}: skillbook {store.name!r} has versions {minimum} to {head} (the head)"
            )
        return version
    try:
        label = validate_label(raw)
    except InvalidLabelError as exc:
        raise BadRequestError(f"{param}={raw!r} is neither a version, {HEAD!r} nor a label: {exc}") from None
    return store.labels.require(label)


def expected_version(view: View, param: str = "expect") -> int | None:
    """The version a confirmation page showed (``expect``); None for "none" (an empty field)."""
    raw = view.query(param).strip()
    if not raw:
        return None
    if not raw.isdigit():
        raise BadRequestError(f"{param}={raw!r}: expected a version number (or nothing for none)")
    return int(raw)


def diff_between(store: RedisSkillbookStore, from_version: int, to_version: int) -> list[dict[str, Any]]:
    """Per skill that differs, its state at ``from_version`` and at ``to_version``, either order.

    ``change`` reads from ``from_version`` to ``to_version`` (added: absent at
    ``from_version``), whichever is older. ChangelogTrimmedError (400) when the
    change log no longer reaches back to the older one.
    """
    if from_version <= to_version:
        diff = store.diff(from_version, to_version)
    else:
        older_first = store.diff(to_version, from_version)
        diff = {skill: (newer, older) for skill, (older, newer) in older_first.items()}
    rows = skill_changes(diff)
    for row in rows:
        present = {*(row["before"] or {}), *(row["after"] or {})} - set(UNTOLD_FIELDS)
        row["shown"] = [f for f in _FIELD_ORDER if f in present] + sorted(
            present - set(_FIELD_ORDER) - {"id"}
        )
    return rows


def shown_rows(view: View, rows: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], int]:
    """The first ``limit`` rows of a diff (a page stays readable), and how many more there are."""
    limit = view.int_query("limit", DEFAULT_SHOWN, minimum=1, maximum=MAX_SHOWN)
    return rows[:limit], max(0, len(rows) - limit)


def summary_of(rows: list[dict[str, Any]]) -> dict[str, int]:
    """How many skills a diff adds, removes and changes."""
    return {
        change: sum(1 for row in rows if row["change"] == change)
        for change in ("added", "removed", "changed")
    }


def labels_by_version(labels: dict[str, int]) -> dict[int, list[str]]:
    """Version -> the labels pointing at it, sorted."""
    found: dict[int, list[str]] = {}
    for label, version in sorted(labels.items()):
        found.setdefault(version, []).append(label)
    return found


def timeline_entry(name: str, change: ChangeDigest, labels: dict[int, list[str]]) -> dict[str, Any]:
    """One version in the timeline: the change log's entry, who made it, what it did, its labels, its diff.

    An entry touching thousands of skills lists the first DIGEST_SHOWN of each list and counts
    the rest (``operations_not_shown``, ``consolidation_not_shown``, ``effect_not_shown``).
    """
    source = change.source or {}
    return {
        **change.to_json(),
        "actor": change_actor(source),
        "batch": source.get("batch"),
        "counts": change.counts,
        "effect": change.effect,
        "effect_not_shown": change.effect_not_shown,
        "labels": labels.get(change.version, []),
        "diff": f"/skillbooks/{name}/diff?from={change.version - 1}&to={change.version}",
    }

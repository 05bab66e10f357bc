"""One skill's page: its state, why it exists (provenance, with evidence), the versions that changed it.

The data is ``skill_history``'s (what ``ace-workers skillbook why`` shows). The
page's actions pin, unpin, archive and restore the skill through the store, as
the user (``user:NAME`` in the change log), with an optional note.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import quote

from starlette.routing import BaseRoute

from ....distributed.store.provenance_reader import DEFAULT_SCAN, skill_history
from ....errors import UnknownSkillError
from ....operations.lifecycle import change_skills
from ...errors import BadRequestError, NotFoundError
from ...views import ActionResult, View, action, page

__all__ = ["LIFECYCLE_ACTIONS", "SKILL_ROUTES", "skill_page", "skill_url"]

LIFECYCLE_ACTIONS = ("pin", "unpin", "archive", "restore")
MAX_SCAN = 10_000
MAX_NOTE_CHARS = 500


def skill_url(skillbook: str, skill_id: str) -> str:
    """The skill's page (ids come from Redis: quoted, so any id makes a link)."""
    return f"/skillbooks/{quote(skillbook, safe='')}/skills/{quote(skill_id, safe='')}"


def skill_page(view: View) -> dict[str, Any]:
    """A skill: content, section, counts, pinned, status, provenance with evidence, and its changes."""
    store = view.store()
    skill_id = view.path("skill_id")
    scan = view.int_query("scan", DEFAULT_SCAN, minimum=1, maximum=MAX_SCAN)
    try:
        history = skill_history(store, skill_id, batches=view.service.runtime.batches, scan=scan)
    except UnknownSkillError:
        raise NotFoundError(
            f"skillbook {store.name!r} has no skill {skill_id!r}, and none of its last {scan} versions "
            "touched one"
        ) from None
    data = history.to_dict()
    for occurrence in data["occurrences"]:
        batch = occurrence.get("batch_id")
        occurrence["batch_url"] = f"/batches/{quote(batch, safe='')}" if isinstance(batch, str) else None
    skill = history.skill or {}
    return {
        **data,
        "name": store.name,
        "skillbook_url": f"/skillbooks/{quote(store.name, safe='')}",
        "url": skill_url(store.name, skill_id),
        "pinned": bool(skill.get("pinned")),
        "actions": _actions(history.state, bool(skill.get("pinned"))),
    }


def _actions(state: str, pinned: bool) -> list[str]:
    """The lifecycle actions that would change the skill now (the store refuses the others)."""
    if state == "active":
        return ["unpin"] if pinned else ["pin", "archive"]
    if state == "archived":
        return ["restore", "unpin"] if pinned else ["restore"]
    return []  # removed (invalid, or gone): only a rollback brings it back


def _lifecycle(name: str) -> Callable[[View], ActionResult]:
    """The action running the lifecycle operation ``name`` (pin, unpin...) on the skill the URL names."""

    def change(view: View) -> ActionResult:
        store = view.store()
        skill_id = view.path("skill_id")
        note = view.query("note").strip()
        if len(note) > MAX_NOTE_CHARS:
            raise BadRequestError(f"note: {len(note)} characters; at most {MAX_NOTE_CHARS}")
        result = change_skills(view.state.fleet, view.acting, store.name, name, [skill_id], note=note)
        if result.changed:
            message = f"{name} {skill_id}: done, skillbook {store.name!r} is at version {result.version}"
        else:
            message = f"{name} {skill_id}: nothing to change, version {result.version} stays"
        return ActionResult(
            message,
            skill_url(store.name, skill_id),
            {
                "skill_id": skill_id,
                "action": name,
                "version": result.version,
                "changed": bool(result.changed),
            },
            notice=f"skill-{name}" if result.changed else "skill-unchanged",
        )

    return change


_SUMMARIES = {
    "pin": "Pin the skill: never removed, merged or archived until unpinned (note: why).",
    "unpin": "Unpin the skill: learning, dedup and pruning may act on it again (note: why).",
    "archive": "Archive the skill: out of the prompt and the count, kept, restorable (note: why).",
    "restore": "Restore an archived skill into the prompt (note: why).",
}

SKILL_PATH = "/skillbooks/{name}/skills/{skill_id:path}"

SKILL_ROUTES: list[BaseRoute] = [
    # The actions first: a skill id may hold "/", so the page's {skill_id:path} would swallow ".../pin".
    *(
        route
        for name in LIFECYCLE_ACTIONS
        for route in action(
            f"{SKILL_PATH}/{name}",
            _lifecycle(name),
            name=f"skill:{name}",
            summary=_SUMMARIES[name],
            target="{name}/{skill_id}",
            role=None,  # the operation authorizes: role admin (curating the skillbook by hand)
        )
    ),
    *page(
        SKILL_PATH,
        "skillbooks/skill.html",
        skill_page,
        name="skill",
        summary=(
            "One skill: state, counts, provenance (occurrences with actor, batch, sample, trace, recipe, "
            f"insight; totals) and the versions that changed it (scan: versions searched [{DEFAULT_SCAN}])."
        ),
    ),
]

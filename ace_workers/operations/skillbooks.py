"""Reading and loading skillbooks: list, show, export, import, a skill's history, a label A/B.

Reads need role ``read`` on the skillbook; an import writes a new version and needs ``admin``
(it may replace every skill). Lists hold only what the principal may see.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..core.skillbook import Skillbook
from ..distributed.store.errors import CorruptDataError
from ..distributed.store.fill import skillbook_fill
from ..distributed.store.outcomes import LabelComparison, compare_labels
from ..distributed.store.provenance_reader import DEFAULT_SCAN, SkillHistory, skill_history
from ..distributed.tenancy.api_keys import visible_skillbooks
from .access import ADMIN, READ, authorized_store, existing_store, visible_names
from .fleet import FleetClient
from .principal import Principal

__all__ = [
    "SkillbookListing",
    "SkillbookSummary",
    "SkillbookShown",
    "compare_skillbook_labels",
    "export_skillbook",
    "import_skillbook",
    "list_skillbooks",
    "list_skillbooks_readable",
    "show_skillbook",
    "skill_why",
]


@dataclass(frozen=True)
class SkillbookSummary:
    """One skillbook of a list: its name, version and active skills."""

    name: str
    version: int
    active_skills: int


@dataclass(frozen=True)
class SkillbookShown:
    """A skillbook as ``show`` prints it: its version, the skills, how full, proposals waiting."""

    name: str
    version: int
    book: Skillbook
    fill: dict[str, int]
    pending_proposals: int

    def to_dict(self) -> dict[str, Any]:
        """The document ``skillbook show --json`` prints."""
        return {
            "name": self.name,
            "version": self.version,
            **self.fill,
            "pending_proposals": self.pending_proposals,
            "skillbook": self.book.to_dict(),
        }


def list_skillbooks(fleet: FleetClient, principal: Principal) -> list[str]:
    """The names of the skillbooks ``principal`` may see, sorted."""
    return visible_names(fleet, principal)


@dataclass(frozen=True)
class SkillbookListing:
    """The skillbooks a principal may see, and one line per record that could not be read."""

    names: list[str]
    summaries: list[SkillbookSummary]
    unreadable: list[str]  # each names the Redis key


def list_skillbooks_readable(
    fleet: FleetClient, principal: Principal, *, summarize: bool
) -> SkillbookListing:
    """The skillbooks ``principal`` may see (with ``summarize``: their versions and active skills).

    One bad record never hides the others: a registry member no skillbook can have (shown to
    fleet-wide principals only: it belongs to no tenant), or a skillbook whose keys cannot be
    read, is a line of ``unreadable`` instead.
    """
    names, bad_members = fleet.skillbook_registry()
    visible = visible_skillbooks(principal.scope, names, fleet.tenant_map())
    unreadable = [str(error) for error in bad_members.values()] if principal.fleet_wide else []
    summaries: list[SkillbookSummary] = []
    for name in visible if summarize else []:
        store = fleet.store(name)
        try:
            summaries.append(SkillbookSummary(name, store.version(), store.active_skills()))
        except CorruptDataError as exc:
            unreadable.append(f"skillbook {name!r}: {exc}")
    return SkillbookListing(visible, summaries, unreadable)


def show_skillbook(fleet: FleetClient, principal: Principal, name: str) -> SkillbookShown:
    """Skillbook ``name`` now. Raises UnknownSkillbookError, or a scope error for another tenant's."""
    store = existing_store(fleet, principal, READ, name)
    version, book = store.snapshot()
    return SkillbookShown(name, version, book, skillbook_fill(store), store.review.pending_count())


def export_skillbook(fleet: FleetClient, principal: Principal, name: str) -> tuple[int, Skillbook]:
    """Skillbook ``name`` and its version, to write to a file."""
    return existing_store(fleet, principal, READ, name).snapshot()


def import_skillbook(
    fleet: FleetClient, principal: Principal, name: str, book: Skillbook, *, replace: bool, file: str
) -> int:
    """Load ``book`` into skillbook ``name`` as one new version; return it.

    Raises SkillbookExistsError if it exists and not ``replace``.
    """
    store = authorized_store(fleet, principal, ADMIN, name)
    source = {"command": "skillbook import", "file": file}
    return store.import_skillbook(book, replace=replace, source=source)


def skill_why(
    fleet: FleetClient, principal: Principal, name: str, skill_id: str, *, scan: int = DEFAULT_SCAN
) -> SkillHistory:
    """Why skill ``skill_id`` of ``name`` exists. Raises UnknownSkillError if no trace of it is found."""
    store = existing_store(fleet, principal, READ, name)
    return skill_history(store, skill_id, batches=fleet.batches, scan=scan)


def compare_skillbook_labels(
    fleet: FleetClient, principal: Principal, name: str, first: str, second: str
) -> LabelComparison:
    """What labels ``first`` and ``second`` of ``name`` served, and how well (95% intervals)."""
    store = existing_store(fleet, principal, READ, name)
    return compare_labels(fleet.redis, store.keys, first, second)

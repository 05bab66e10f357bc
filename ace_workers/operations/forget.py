"""Forget: erase the traces a selector matches from every place the fleet keeps them, and record it.

Role admin only: the operator or a fleet-wide admin key forgets across every tenant; a tenant's
own admin key forgets within the skillbooks (and their batches) of its tenant.

Samples in flight: the erasure waits until every running batch holding a matched sample has
finished (done, failed or cancelled), then erases. A running batch re-reads its inputs for later
epochs and a running step carries the trace in its message; erasing under it would make it fail
or write its content again after the erasure. Waiting costs at most ``wait_seconds``; past that
nothing is erased (SamplesInFlightError) and the command can be run again, or the batch
cancelled first.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from ..core.updates import UpdateBatch, UpdateOperation
from ..distributed.store.erasure import ErasurePlan, erase, find
from ..distributed.store.erasure_records import new_erasure_id, read_erasures, record_erasure
from ..distributed.store.erasure_selector import Selector
from ..distributed.store.errors import ProposalDecidedError, SamplesInFlightError
from ..distributed.tenancy.api_keys import can_see
from ..errors import PinnedSkillError
from .access import ADMIN
from .errors import AdminRoleRequiredError
from .fleet import FleetClient
from .principal import Principal

__all__ = ["DERIVED_ACTIONS", "ForgetResult", "forget", "forget_history"]

# What happens to the skills whose only evidence was the forgotten traces.
DERIVED_ACTIONS = ("list", "archive", "remove")
# How often a waiting erasure looks again, and says it still waits.
_POLL_SECONDS = 0.5
_SAY_EVERY_SECONDS = 10.0


def _silent(line: str) -> None:
    """Progress nobody reads."""


@dataclass(frozen=True)
class ForgetResult:
    """What one ``forget`` found and did (``dry_run``: would do); its erasure record says the same."""

    erasure_id: str
    selector: Selector
    dry_run: bool
    samples: int  # matched samples (batch, index) found
    counts: dict[str, int]
    derived: dict[str, list[str]]  # skillbook -> skills whose only evidence was the matched traces
    derived_action: str
    # skillbook -> pending proposals only matched samples proposed (rejected with archive/remove)
    derived_proposals: dict[str, list[str]] = field(default_factory=dict)
    derived_versions: dict[str, int] = field(default_factory=dict)  # the version archiving/removing made
    derived_skipped: dict[str, list[str]] = field(default_factory=dict)  # pinned: left as they are
    in_flight: dict[str, int] = field(default_factory=dict)  # dry run: running batches with matches
    waited_seconds: float = 0.0

    @property
    def erased(self) -> int:
        """Records erased (or, dry run, that would be) over every place."""
        return sum(self.counts.values())

    @property
    def nothing_matched(self) -> bool:
        """True when the selector matched no record anywhere (a second run of the same forget)."""
        return not self.erased and not self.samples

    def to_dict(self) -> dict[str, Any]:
        """The result as JSON."""
        return {
            "erasure_id": self.erasure_id,
            "selector": self.selector.to_dict(),
            "dry_run": self.dry_run,
            "samples": self.samples,
            "counts": self.counts,
            "derived": self.derived,
            "derived_action": self.derived_action,
            "derived_proposals": self.derived_proposals,
            "derived_versions": self.derived_versions,
            "derived_skipped": self.derived_skipped,
            "in_flight": self.in_flight,
            "waited_seconds": round(self.waited_seconds, 3),
        }


def _require_admin(principal: Principal) -> None:
    if principal.role != ADMIN:
        raise AdminRoleRequiredError(principal.name, principal.role, "forget traces")


def forget(
    fleet: FleetClient,
    principal: Principal,
    selector: Selector,
    *,
    dry_run: bool = False,
    derived_action: str = "list",
    wait_seconds: float = 600.0,
    say: Callable[[str], None] = _silent,
    sleep: Callable[[float], None] = time.sleep,
) -> ForgetResult:
    """Erase what ``selector`` matches (within what ``principal`` may see) and record the erasure.

    ``derived_action``: ``list`` the skills whose only evidence was the matched traces, or
    ``archive`` or ``remove`` them (one change-log version per skillbook, the principal its actor);
    with either, the pending proposals only matched samples proposed are rejected too.

    Raises:
        AdminRoleRequiredError: the principal's role is not admin.
        SamplesInFlightError: matched samples still run after ``wait_seconds``; nothing erased.
    """
    _require_admin(principal)
    if derived_action not in DERIVED_ACTIONS:
        raise ValueError(
            f"derived_action must be one of {', '.join(DERIVED_ACTIONS)}, got {derived_action!r}"
        )
    tenants = None if principal.fleet_wide else fleet.tenant_map()

    def in_scope(skillbook: str) -> bool:
        return tenants is None or can_see(principal.scope, skillbook, tenants)

    erasure_id = new_erasure_id()
    started = time.monotonic()
    plan = _plan_when_settled(fleet, selector, in_scope, dry_run, wait_seconds, say, sleep, started)
    skillbooks = [name for name in fleet.skillbook_names() if in_scope(name)]
    counts = erase(
        fleet.redis, fleet.prefix, plan, skillbooks, dry_run=dry_run, say=say, every_claim=tenants is None
    )
    versions, skipped = (
        ({}, {}) if dry_run else _act_on_derived(fleet, principal, plan, derived_action, erasure_id)
    )
    result = ForgetResult(
        erasure_id=erasure_id,
        selector=selector,
        dry_run=dry_run,
        samples=len(plan.matched.samples),
        counts=counts,
        derived=plan.derived,
        derived_action=derived_action,
        derived_proposals=plan.derived_proposals,
        derived_versions=versions,
        derived_skipped=skipped,
        in_flight=plan.in_flight if dry_run else {},
        waited_seconds=time.monotonic() - started,
    )
    if not dry_run:
        record_erasure(
            fleet.redis,
            fleet.prefix,
            {
                "id": erasure_id,
                "at": datetime.now(UTC).isoformat(),
                "by": principal.name,
                "tenant": principal.tenant,
                "selector": selector.to_dict(),
                "samples": result.samples,
                "counts": counts,
                "derived": plan.derived,
                "derived_action": derived_action,
            },
        )
    return result


def _plan_when_settled(
    fleet: FleetClient,
    selector: Selector,
    in_scope: Callable[[str], bool],
    dry_run: bool,
    wait_seconds: float,
    say: Callable[[str], None],
    sleep: Callable[[float], None],
    started: float,
) -> ErasurePlan:
    """The plan once no running batch holds a matched sample (a dry run does not wait)."""
    said = 0.0
    while True:
        plan = find(fleet.redis, fleet.prefix, selector, in_scope, batches=fleet.batches, say=say)
        waited = time.monotonic() - started
        if not plan.in_flight or dry_run:
            return plan
        if waited >= wait_seconds:
            raise SamplesInFlightError(sorted(plan.in_flight), sum(plan.in_flight.values()), wait_seconds)
        if not said or waited - said >= _SAY_EVERY_SECONDS:
            said = waited or 1e-9
            say(
                f"waiting for {sum(plan.in_flight.values())} matched samples in flight in "
                f"{', '.join(sorted(plan.in_flight))} to finish"
            )
        sleep(_POLL_SECONDS)


def _act_on_derived(
    fleet: FleetClient, principal: Principal, plan: ErasurePlan, action: str, erasure_id: str
) -> tuple[dict[str, int], dict[str, list[str]]]:
    """Archive or remove the derived skills, one version per skillbook; (versions, pinned ones left)."""
    versions: dict[str, int] = {}
    skipped: dict[str, list[str]] = {}
    if action == "list":
        return versions, skipped
    note = f"forget {erasure_id}: learned only from erased traces"
    for name, proposal_ids in plan.derived_proposals.items():
        review = fleet.store(name).review
        for proposal_id in proposal_ids:
            try:
                review.reject(proposal_id, actor=principal.name, note=note)
            except ProposalDecidedError:
                continue  # decided since it was read: approved, it is a skill the next forget lists
    for name, skill_ids in plan.derived.items():
        store = fleet.store(name)
        pinned = [skill.id for skill in store.export().skills() if skill.id in skill_ids and skill.pinned]
        if pinned:
            skipped[name] = pinned  # pinned by a person: kept, and said so
        chosen = [skill_id for skill_id in skill_ids if skill_id not in pinned]
        if not chosen:
            continue
        if action == "archive":
            try:
                versions[name] = store.archive(chosen, actor=principal.name, note=note).version
            except PinnedSkillError:  # pinned since we looked: the next forget lists it again
                skipped.setdefault(name, []).extend(chosen)
        else:
            batch = UpdateBatch(
                reasoning=note, operations=[UpdateOperation(type="REMOVE", skill_id=i) for i in chosen]
            )
            source = {"actor": principal.name, "forget": erasure_id}
            versions[name] = store.apply(batch, source=source).version
    return versions, skipped


def forget_history(fleet: FleetClient, principal: Principal, limit: int = 50) -> list[dict[str, Any]]:
    """The newest erasure records the principal may read (a tenant's admin: its tenant's), newest first."""
    _require_admin(principal)
    records = read_erasures(fleet.redis, fleet.prefix, limit)
    if principal.fleet_wide:
        return records
    return [record for record in records if record.get("tenant") == principal.tenant]

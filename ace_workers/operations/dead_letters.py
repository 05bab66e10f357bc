"""Reading the dead letters: samples whose step failed after its retries.

Sending them back (``dead-letters retry``) needs the dispatcher and stays with its command.
"""

from __future__ import annotations

from ..distributed.tenancy.api_keys import can_see
from ..distributed.worker.dead_letters import DeadLetter, LetterFilter, read_dead_letters
from .fleet import FleetClient
from .principal import Principal

__all__ = ["list_dead_letters"]


def list_dead_letters(fleet: FleetClient, principal: Principal, matches: LetterFilter) -> list[DeadLetter]:
    """The parked letters ``matches`` takes, oldest first, of the skillbooks ``principal`` may see.

    A key scoped to a tenant does not see letters it cannot place (unreadable, no skillbook).
    """
    letters = read_dead_letters(fleet, matches)
    if principal.fleet_wide:
        return letters
    tenants = fleet.tenant_map()
    return [
        letter
        for letter in letters
        if isinstance(skillbook := letter.kwarg("skillbook"), str)
        and can_see(principal.scope, skillbook, tenants)
    ]

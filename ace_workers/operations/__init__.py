"""The application layer: every operation a person or program asks of the fleet, written once.

The CLI, the console and MCP are adapters over it: they parse, turn their caller into a
:class:`Principal`, call an operation on a :class:`FleetClient`, and render its typed result.
Authorization is decided here, once; an error is answered by its class through
:func:`outcome_of` (exit code, HTTP status, MCP code).
"""

from .fleet import FleetClient, open_fleet
from .outcomes import OUTCOMES, Outcome, outcome_of
from .principal import Principal, authorize, operator, principal_for_key

__all__ = [
    # who asks
    "Principal",
    "operator",
    "principal_for_key",
    "authorize",
    # the fleet's state
    "FleetClient",
    "open_fleet",
    # how errors are answered
    "Outcome",
    "OUTCOMES",
    "outcome_of",
]

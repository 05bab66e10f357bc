"""What names a tenant, and the names of its budgets: the limits, what a spent budget does, every model.

Kept apart from the tenant registry (tenants.py) so that what a command's ``--help`` shows,
such as ``tenant set --budget``'s limits, does not load the Redis client.
"""

from __future__ import annotations

import re

from .errors import InvalidTenantError

__all__ = ["ALL_MODELS", "BUDGET_ACTIONS", "BUDGET_LIMITS", "validate_tenant_name"]

# The model name of a budget that counts every model of the tenant together.
ALL_MODELS = "*"
# What happens to a sample whose tenant's budget is spent: it waits for the window to reset
# (or the budget to be raised), or it fails with the reason.
BUDGET_ACTIONS = ("wait", "fail")
# The four limits of a budget, in the order they are shown.
BUDGET_LIMITS = ("tokens_per_day", "tokens_per_month", "cost_per_day", "cost_per_month")

_TENANT_NAME = re.compile(r"[a-z0-9][a-z0-9_-]{0,63}")


def validate_tenant_name(name: object) -> str:
    """Return ``name`` if it can name a tenant (lowercase letters, digits, ``-``, ``_``; 64 at most)."""
    if not isinstance(name, str) or _TENANT_NAME.fullmatch(name) is None:
        raise InvalidTenantError(
            "name", name, "use 1 to 64 lowercase letters, digits, '-' or '_', starting with a letter or digit"
        )
    return name

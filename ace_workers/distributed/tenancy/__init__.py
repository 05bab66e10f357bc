"""Many teams on one fleet: tenants, their scoped API keys, budgets and shared rate limits.

Above the store (it keeps all of it in Redis) and below the workers, which enforce it.
"""

from .errors import (
    BudgetExhaustedError,
    InvalidTenantError,
    TenancyError,
    TenantConflictError,
    TenantExistsError,
    UnknownTenantError,
)
from .tenants import (
    ALL_MODELS,
    DEFAULT_TENANT,
    Budget,
    CachedTenants,
    Tenant,
    TenantMap,
    TenantRegistry,
    validate_tenant_name,
)

__all__ = [
    # tenants
    "ALL_MODELS",
    "DEFAULT_TENANT",
    "Budget",
    "CachedTenants",
    "Tenant",
    "TenantMap",
    "TenantRegistry",
    "validate_tenant_name",
    # errors
    "BudgetExhaustedError",
    "InvalidTenantError",
    "TenancyError",
    "TenantConflictError",
    "TenantExistsError",
    "UnknownTenantError",
]

"""Many teams on one fleet: tenants, their scoped API keys, budgets and shared rate limits.

Above the store (it keeps all of it in Redis) and below the workers, which enforce it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...lazy import lazy_exports

if TYPE_CHECKING:
    from .api_keys import (
        ALL_TENANTS,
        OPERATOR,
        ROLES,
        ApiKey,
        ApiKeys,
        Scope,
        authorize,
        can_see,
        role_at_least,
        visible_skillbooks,
    )
    from .errors import (
        BudgetExhaustedError,
        ForeignSkillbookError,
        InvalidApiKeyError,
        InvalidTenantError,
        ProviderBusyError,
        RoleTooLowError,
        ScopeError,
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
    # API keys
    "ALL_TENANTS",
    "OPERATOR",
    "ROLES",
    "ApiKey",
    "ApiKeys",
    "Scope",
    "authorize",
    "can_see",
    "role_at_least",
    "visible_skillbooks",
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
    "ForeignSkillbookError",
    "InvalidApiKeyError",
    "InvalidTenantError",
    "ProviderBusyError",
    "RoleTooLowError",
    "ScopeError",
    "TenancyError",
    "TenantConflictError",
    "TenantExistsError",
    "UnknownTenantError",
]

# PEP 562: each name is imported from its module on first use, so importing one module of
# this package (its errors, say) does not import the others, nor Celery.
_SOURCES = (
    ".errors",
    ".api_keys",
    ".tenants",
)
__getattr__ = lazy_exports(__name__, __all__, _SOURCES)

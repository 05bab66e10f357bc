"""Tenants: who owns which skillbooks, how much of the fleet they get, and what they may spend.

A tenant owns skillbooks by explicit name or by name prefix; an explicit name wins over a
prefix, and a longer prefix over a shorter one. A skillbook no tenant owns belongs to
``default``, which exists without being added (add it, or ``set`` it, to give it a weight
or budgets). Tenants live in one Redis hash, written in WATCH transactions that check no
two tenants claim the same skillbook or prefix; every change bumps a version counter, so
a process's :class:`CachedTenants` reloads only when something changed.
"""

from __future__ import annotations

import json
import math
import re
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

import redis

from ...counts import noun_for
from ...redaction.errors import RedactionSpecError
from ...redaction.spec import parse_redaction_spec
from ..store.errors import CorruptDataError
from ..store.keys import DEFAULT_TENANT, tenants_key, tenants_version_key, validate_skillbook_name
from ..store.replies import decode_text
from .errors import InvalidTenantError, TenantConflictError, TenantExistsError, UnknownTenantError
from .tenant_names import ALL_MODELS, BUDGET_ACTIONS, BUDGET_LIMITS, validate_tenant_name

__all__ = [
    "ALL_MODELS",
    "BUDGET_ACTIONS",
    "BUDGET_LIMITS",
    "DEFAULT_TENANT",
    "Budget",
    "CachedTenants",
    "Tenant",
    "TenantMap",
    "TenantRegistry",
    "owned_skillbooks",
    "validate_tenant_name",
]

# The largest limits a budget may set (docs/tenants.md): far above any real spend, and small
# enough that the limiter's float arithmetic never overflows (400 nines did, at every LLM step).
MAX_BUDGET_TOKENS = 10**15
MAX_BUDGET_USD = 10**9
MAX_MODEL_CHARS = 200  # litellm's longest model names are under 100

_PREFIX = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,127}")
_WATCH_ATTEMPTS = 20


@dataclass(frozen=True)
class Budget:
    """What a tenant may spend on one model (``*``: all its models together) per UTC day and month.

    Tokens are prompt plus completion tokens; cost is in USD as litellm prices the calls. None
    is no limit.
    """

    model: str = ALL_MODELS
    tokens_per_day: int | None = None
    tokens_per_month: int | None = None
    cost_per_day: float | None = None
    cost_per_month: float | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.model, str) or not self.model or any(c.isspace() for c in self.model):
            raise InvalidTenantError("budget model", self.model, "name a model, or '*' for every model")
        if len(self.model) > MAX_MODEL_CHARS:
            raise InvalidTenantError(
                "budget model",
                f"{self.model[:40]}...",
                f"a model name of at most {MAX_MODEL_CHARS} characters",
            )
        for name in ("tokens_per_day", "tokens_per_month"):
            value = getattr(self, name)
            if value is not None and (
                isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_BUDGET_TOKENS
            ):
                raise InvalidTenantError(
                    f"budget {name}",
                    _shown(value),
                    f"must be a whole number from 0 to {MAX_BUDGET_TOKENS:.0e}",
                )
        for name in ("cost_per_day", "cost_per_month"):
            value = getattr(self, name)
            if value is not None and (
                isinstance(value, bool)
                or not isinstance(value, int | float)
                or not math.isfinite(value)
                or not 0 <= value <= MAX_BUDGET_USD
            ):
                raise InvalidTenantError(
                    f"budget {name}", _shown(value), f"must be a number of USD from 0 to {MAX_BUDGET_USD:.0e}"
                )

    @property
    def limited(self) -> bool:
        """True when at least one of the four limits is set."""
        return any(
            value is not None
            for value in (self.tokens_per_day, self.tokens_per_month, self.cost_per_day, self.cost_per_month)
        )

    def to_dict(self) -> dict[str, Any]:
        """The budget as JSON: its model and the limits that are set."""
        limits = {
            "tokens_per_day": self.tokens_per_day,
            "tokens_per_month": self.tokens_per_month,
            "cost_per_day": self.cost_per_day,
            "cost_per_month": self.cost_per_month,
        }
        return {"model": self.model, **{name: value for name, value in limits.items() if value is not None}}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Budget:
        """The budget ``to_dict`` wrote; InvalidTenantError naming the field that is wrong."""
        unknown = set(data) - {"model", *BUDGET_LIMITS}
        if unknown:
            raise InvalidTenantError("budget", sorted(unknown), f"unknown {noun_for(len(unknown), 'field')}")
        return cls(**data)


@dataclass(frozen=True)
class Tenant:
    """A tenant: the skillbooks it owns, its share of the fleet, its budgets, and what is redacted.

    ``weight`` is its share of admission to the learn queues against other tenants with work
    (2 gets twice the samples in flight of 1); ``max_in_flight`` caps its samples in flight
    (None: no cap beyond the fleet's window). ``on_budget`` says what a sample does when a
    budget is spent: ``wait`` (deferred until the window resets or the budget is raised) or
    ``fail``. ``redact`` replaces ACE_REDACT for its skillbooks' traces (docs/redaction.md).
    """

    name: str
    skillbooks: tuple[str, ...] = ()
    prefixes: tuple[str, ...] = ()
    weight: int = 1
    max_in_flight: int | None = None
    budgets: tuple[Budget, ...] = ()
    on_budget: str = "wait"
    # What is redacted from its traces, as ACE_REDACT writes it; None: the fleet's ACE_REDACT.
    redact: str | None = None

    def __post_init__(self) -> None:
        validate_tenant_name(self.name)
        _check_redaction(self.redact)
        for skillbook in self.skillbooks:
            try:
                validate_skillbook_name(skillbook)
            except ValueError as exc:
                raise InvalidTenantError("skillbook", skillbook, str(exc)) from None
        for prefix in self.prefixes:
            if not isinstance(prefix, str) or _PREFIX.fullmatch(prefix) is None:
                raise InvalidTenantError("prefix", prefix, "must be the start of a skillbook name")
        if isinstance(self.weight, bool) or not isinstance(self.weight, int) or not 1 <= self.weight <= 1000:
            raise InvalidTenantError("weight", self.weight, "must be a whole number from 1 to 1000")
        cap = self.max_in_flight
        if cap is not None and (isinstance(cap, bool) or not isinstance(cap, int) or cap < 1):
            raise InvalidTenantError("max_in_flight", cap, "must be a whole number >= 1, or unset")
        if self.on_budget not in BUDGET_ACTIONS:
            raise InvalidTenantError("on_budget", self.on_budget, f"use {' or '.join(BUDGET_ACTIONS)}")
        models = [budget.model for budget in self.budgets]
        if len(set(models)) != len(models):
            raise InvalidTenantError("budgets", models, "one budget per model")

    def budget_for(self, model: str) -> tuple[Budget, ...]:
        """The budgets a call to ``model`` counts against: the model's own and the all-models one."""
        wanted = (model, ALL_MODELS)
        return tuple(budget for budget in self.budgets if budget.model in wanted and budget.limited)

    def with_budget(self, budget: Budget) -> Tenant:
        """This tenant with ``budget`` in place of its budget for the same model (dropped if unlimited)."""
        kept = tuple(b for b in self.budgets if b.model != budget.model)
        return replace(self, budgets=kept + ((budget,) if budget.limited else ()))

    def to_dict(self) -> dict[str, Any]:
        """The tenant as stored and as ``tenant show --json`` prints it."""
        return {
            "name": self.name,
            "skillbooks": list(self.skillbooks),
            "prefixes": list(self.prefixes),
            "weight": self.weight,
            "max_in_flight": self.max_in_flight,
            "budgets": [budget.to_dict() for budget in self.budgets],
            "on_budget": self.on_budget,
            **({"redact": self.redact} if self.redact is not None else {}),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Tenant:
        """The tenant ``to_dict`` wrote; InvalidTenantError naming the field that is wrong."""
        known = {"name", "skillbooks", "prefixes", "weight", "max_in_flight", "budgets", "on_budget"}
        known.add("redact")
        unknown = set(data) - known
        if unknown:
            raise InvalidTenantError("field", sorted(unknown), "unknown")
        values = dict(data)
        for name in ("skillbooks", "prefixes"):
            if not isinstance(values.get(name, []), list):
                raise InvalidTenantError(name, values[name], "must be a list")
            values[name] = tuple(values.get(name, ()))
        budgets = values.get("budgets", [])
        if not isinstance(budgets, list) or not all(isinstance(b, dict) for b in budgets):
            raise InvalidTenantError("budgets", budgets, "must be a list of objects")
        values["budgets"] = tuple(Budget.from_dict(b) for b in budgets)
        return cls(**values)


class TenantMap:
    """Which tenant owns which skillbook, from a set of tenants (pure: no Redis)."""

    def __init__(self, tenants: Mapping[str, Tenant] | None = None) -> None:
        self.tenants: dict[str, Tenant] = dict(tenants or {})
        self._explicit: dict[str, str] = {}
        prefixes: list[tuple[str, str]] = []
        for tenant in self.tenants.values():
            self._explicit.update(dict.fromkeys(tenant.skillbooks, tenant.name))
            prefixes.extend((prefix, tenant.name) for prefix in tenant.prefixes)
        # Longest first: the most specific prefix wins.
        self._prefixes = sorted(prefixes, key=lambda pair: (-len(pair[0]), pair[0]))

    def tenant_of(self, skillbook: str) -> str:
        """The tenant owning ``skillbook``: by explicit name, else by longest prefix, else ``default``."""
        owner = self._explicit.get(skillbook)
        if owner is not None:
            return owner
        for prefix, name in self._prefixes:
            if skillbook.startswith(prefix):
                return name
        return DEFAULT_TENANT

    def get(self, name: str) -> Tenant:
        """Tenant ``name``; ``default`` exists even when it was never stored."""
        tenant = self.tenants.get(name)
        if tenant is not None:
            return tenant
        if name == DEFAULT_TENANT:
            return Tenant(DEFAULT_TENANT)
        raise UnknownTenantError(name, sorted(self.tenants))

    def conflicts(self, tenant: Tenant) -> None:
        """Raise TenantConflictError if ``tenant`` claims a skillbook or prefix another tenant has."""
        for other in self.tenants.values():
            if other.name == tenant.name:
                continue
            for skillbook in set(tenant.skillbooks) & set(other.skillbooks):
                raise TenantConflictError(tenant.name, other.name, f"skillbook {skillbook!r}")
            for prefix in set(tenant.prefixes) & set(other.prefixes):
                raise TenantConflictError(tenant.name, other.name, f"prefix {prefix!r}")


class TenantRegistry:
    """The tenants of one fleet (one key prefix) in Redis."""

    def __init__(self, client: redis.Redis, *, prefix: str = "ace") -> None:
        self.redis = client
        self.prefix = prefix
        self.key = tenants_key(prefix)
        self.version_key = tenants_version_key(prefix)

    def version(self) -> int:
        """The tenants' version: it changes with every add, set or remove."""
        return int(self.redis.get(self.version_key) or 0)

    def all(self) -> dict[str, Tenant]:
        """Every stored tenant by name (``default`` only if it was added or set)."""
        return self._parse(self.redis.hgetall(self.key))

    def map(self) -> TenantMap:
        """The tenants as a TenantMap, read in one round trip."""
        return TenantMap(self.all())

    def get(self, name: str) -> Tenant:
        """Tenant ``name``; the implicit ``default`` when it was never stored.

        Raises:
            UnknownTenantError: no tenant ``name`` (the error lists the tenants).
        """
        validate_tenant_name(name)
        raw = self.redis.hget(self.key, name)
        if raw is not None:
            return self._parse({name: raw})[name]
        if name == DEFAULT_TENANT:
            return Tenant(DEFAULT_TENANT)
        raise UnknownTenantError(name, sorted(self.all()))

    def tenant_of(self, skillbook: str) -> str:
        """The tenant owning ``skillbook`` now (a process reading it per call wants CachedTenants)."""
        return self.map().tenant_of(skillbook)

    def add(self, tenant: Tenant) -> Tenant:
        """Store a new tenant.

        Raises:
            TenantExistsError: a tenant of that name was stored already.
            TenantConflictError: another tenant owns one of its skillbooks or prefixes.
        """

        def create(stored: dict[str, Tenant]) -> Tenant:
            if tenant.name in stored:
                raise TenantExistsError(tenant.name)
            return tenant

        return self._write(tenant.name, create)

    def update(self, name: str, change: Callable[[Tenant], Tenant]) -> Tenant:
        """Store ``change(tenant)`` in place of tenant ``name``, atomically; return the new tenant.

        ``change`` may run more than once (when another writer got in between).

        Raises:
            UnknownTenantError: no tenant ``name`` (``default`` always exists).
            TenantConflictError: the changed tenant claims what another tenant owns.
        """
        validate_tenant_name(name)

        def changed(stored: dict[str, Tenant]) -> Tenant:
            tenant = change(TenantMap(stored).get(name))
            if tenant.name != name:
                raise InvalidTenantError("name", tenant.name, f"a change of {name!r} cannot rename it")
            return tenant

        return self._write(name, changed)

    def remove(self, name: str) -> bool:
        """Remove tenant ``name``; its skillbooks go back to ``default``. False if it was not stored."""
        validate_tenant_name(name)
        with self.redis.pipeline(transaction=True) as pipe:
            pipe.hdel(self.key, name)
            pipe.incr(self.version_key)
            removed, _ = pipe.execute()
        return bool(removed)

    def _write(self, name: str, make: Callable[[dict[str, Tenant]], Tenant]) -> Tenant:
        """Store ``make(stored tenants)`` in one WATCH transaction, checked against the others' claims."""
        for _ in range(_WATCH_ATTEMPTS):
            # transaction=True: a cluster pipeline refuses WATCH without it (a plain one defaults to it).
            with self.redis.pipeline(transaction=True) as pipe:
                try:
                    pipe.watch(self.key)  # type: ignore[no-untyped-call]
                    stored = self._parse(pipe.hgetall(self.key))
                    tenant = make(stored)
                    TenantMap(stored).conflicts(tenant)
                    self._store(pipe, tenant)
                    return tenant
                except redis.WatchError:
                    continue
        raise redis.WatchError(f"tenant {name!r}: {_WATCH_ATTEMPTS} writers got in between; try again")

    def _store(self, pipe: Any, tenant: Tenant) -> None:
        pipe.multi()
        pipe.hset(self.key, tenant.name, json.dumps(tenant.to_dict(), sort_keys=True))
        pipe.incr(self.version_key)
        pipe.execute()

    def _parse(self, raw: Mapping[Any, Any]) -> dict[str, Tenant]:
        tenants = {}
        for name, value in raw.items():
            text = decode_text(name)
            try:
                tenants[text] = Tenant.from_dict(json.loads(decode_text(value)))
            except (ValueError, TypeError) as exc:  # InvalidTenantError is a ValueError
                raise CorruptDataError(self.key, f"field {text!r}: {exc}") from None
        return tenants


class CachedTenants:
    """A process's view of the tenants: reloaded when their version moved, looked at most every ``max_age`` s.

    Workers ask for a skillbook's tenant on every step and every LLM call; this costs one
    GET every ``max_age`` seconds, and a full read only after a change.
    """

    def __init__(
        self,
        registry: TenantRegistry,
        *,
        max_age_seconds: float = 2.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.registry = registry
        self.max_age_seconds = max_age_seconds
        self._clock = clock
        self._lock = threading.Lock()
        self._map = TenantMap()
        self._version = -1
        self._checked = -math.inf

    def current(self) -> TenantMap:
        """The tenants as of at most ``max_age_seconds`` ago."""
        with self._lock:
            now = self._clock()
            if now - self._checked >= self.max_age_seconds:
                version = self.registry.version()
                if version != self._version:
                    self._map = self.registry.map()
                    self._version = version
                self._checked = now
            return self._map

    def tenant_of(self, skillbook: str) -> str:
        """The tenant owning ``skillbook``."""
        return self.current().tenant_of(skillbook)

    def get(self, name: str) -> Tenant:
        """Tenant ``name`` (UnknownTenantError if there is none)."""
        return self.current().get(name)

    def forget(self) -> None:
        """Read the tenants again on the next look (after this process changed them)."""
        with self._lock:
            self._checked = -math.inf


def _check_redaction(text: str | None) -> None:
    """InvalidTenantError naming the bad entry of a tenant's redaction setting (None: the fleet's)."""
    if text is None:
        return
    try:
        parse_redaction_spec(text)
    except RedactionSpecError as exc:
        raise InvalidTenantError("redact", text, str(exc)) from None


def owned_skillbooks(tenant: Tenant, names: Iterable[str], tenants: TenantMap) -> list[str]:
    """The skillbooks among ``names`` that ``tenant`` owns, sorted."""
    return sorted(name for name in names if tenants.tenant_of(name) == tenant.name)


def _shown(value: object) -> object:
    """A value for an error line: a number of 400 digits shown by its length."""
    text = str(value)
    return value if len(text) <= 40 else f"{text[:20]}... ({len(text)} characters)"

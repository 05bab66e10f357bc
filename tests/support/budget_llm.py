"""An LLM factory (ACE_LLM_FACTORY) whose calls spend a tenant's budget kept in Redis, shared by every worker.

A model ``budget/PORT/DB/PREFIX/TENANT`` is the simulated LLM, but each call first spends one
unit of tenant ``TENANT``'s ``tokens_per_day`` for the pseudo-model ``fake-units`` (as stored in
the tenants of queue prefix ``PREFIX`` in database DB of the Redis at 127.0.0.1:PORT), in one Lua
script, so two worker processes share it. A call past the budget raises BudgetExhaustedError
(model ``fake-units``) with the tenant's ``on_budget``, as the fleet's limiter does. The budget
names a model no call is made to, so the fleet's own limiter, which counts real tokens against
the budgets of the model called and of ``*``, never counts against it. Each call that got through is counted
per (batch, sample, step) from the step's write scope, so a test sees a step run twice.
Any other model is the plain simulator.
"""

from __future__ import annotations

import time
from typing import Any, TypeVar
from urllib.parse import urlsplit

import redis
from pydantic import BaseModel

from ace_workers.distributed.store.write_scope import current_write_scope
from ace_workers.distributed.tenancy.budget_watch import limit_now
from ace_workers.distributed.tenancy.errors import BudgetExhaustedError
from ace_workers.distributed.tenancy.tenants import TenantRegistry
from ace_workers.sim import SimulatedLLM
from ace_workers.sim.llm import SimulatedCompletion

ModelT = TypeVar("ModelT", bound=BaseModel)

LIMIT = "tokens_per_day"
# The pseudo-model whose budget the fake spends (one unit a call).
UNITS = "fake-units"
# Spend one unit unless the budget is spent in the current window (86400 s, or what the period key
# says; a window that ended starts a new one with nothing spent). Returns {units spent now or -1 if
# refused, when the window ends}.
_SPEND = """
local now = tonumber(ARGV[2])
local period = tonumber(redis.call('GET', KEYS[3]) or '86400')
local ends = tonumber(redis.call('GET', KEYS[2]) or '0')
if now >= ends then
    ends = now + period
    redis.call('SET', KEYS[2], tostring(ends))
    redis.call('SET', KEYS[1], 0)
end
local spent = tonumber(redis.call('GET', KEYS[1]) or '0')
if ARGV[1] ~= '' and spent + 1 > tonumber(ARGV[1]) then
    return {-1, tostring(ends)}
end
return {redis.call('INCR', KEYS[1]), tostring(ends)}
"""


def budget_model(redis_url: str, prefix: str, tenant: str) -> str:
    """The model name whose calls spend ``tenant``'s budget, kept in the Redis at ``redis_url`` (local)."""
    url = urlsplit(redis_url)
    assert url.hostname in ("127.0.0.1", "localhost"), redis_url
    return f"budget/{url.port or 6379}/{url.path.strip('/') or 0}/{prefix}/{tenant}"


class FakeBudget:
    """What a tenant spent (one unit per call) and which steps' calls got through, in Redis."""

    def __init__(self, client: redis.Redis, prefix: str, tenant: str) -> None:
        self.redis = client
        self.prefix = prefix
        self.tenant = tenant
        self._spend = client.register_script(_SPEND)

    def key(self, part: str) -> str:
        """A key of this fake budget (the test's own: not one of ace-workers' keys)."""
        return f"fake-budget:{self.prefix}:{self.tenant}:{part}"

    def spend(self) -> None:
        """Spend one unit, or raise BudgetExhaustedError as the limiter would."""
        registry = TenantRegistry(self.redis, prefix=self.prefix)
        limit = limit_now(registry.map(), self.tenant, UNITS, LIMIT)
        keys = [self.key("spent"), self.key("ends"), self.key("period")]
        answer, ends = self._spend(keys=keys, args=["" if limit is None else limit, time.time()])
        if int(answer) < 0:
            self.redis.incr(self.key("refused"))
            raise BudgetExhaustedError(
                self.tenant,
                UNITS,
                LIMIT,
                spent=self.spent(),
                budget=float(limit or 0),
                resets_at=float(ends),
                on_budget=registry.get(self.tenant).on_budget,
            )
        scope = current_write_scope()
        if scope is not None:
            source = scope.source
            self.redis.hincrby(
                self.key("calls"),
                f"{source['batch']}|e{source['epoch']}:{source['sample']}|{source['step']}",
                1,
            )

    def set_window(self, seconds: float) -> None:
        """Make each budget window last ``seconds`` (from the next one on)."""
        self.redis.set(self.key("period"), seconds)

    def spent(self) -> int:
        """Units spent so far."""
        return int(self.redis.get(self.key("spent")) or 0)

    def refused(self) -> int:
        """Calls refused for the spent budget so far."""
        return int(self.redis.get(self.key("refused")) or 0)

    def calls(self) -> dict[str, int]:
        """Calls that got through, by "batch|eN:I|step"."""
        return {k.decode(): int(v) for k, v in self.redis.hgetall(self.key("calls")).items()}


class BudgetedLLM(SimulatedLLM):
    """The simulated LLM, spending a tenant's fake budget before each call."""

    def __init__(self, budget: FakeBudget) -> None:
        super().__init__(trust_threshold=0)
        self.budget = budget

    def complete(self, prompt: str, **kwargs: Any) -> SimulatedCompletion:
        self.budget.spend()
        return super().complete(prompt, **kwargs)

    def complete_structured(self, prompt: str, response_model: type[ModelT], **kwargs: Any) -> ModelT:
        self.budget.spend()
        return super().complete_structured(prompt, response_model, **kwargs)


def budgeted_llm(model: str) -> SimulatedLLM:
    """The budgeted simulator for ``budget/PORT/DB/PREFIX/TENANT``; the plain simulator otherwise."""
    if not model.startswith("budget/"):
        return SimulatedLLM(trust_threshold=0)
    _, port, db, prefix, tenant = model.split("/")
    client = redis.Redis(host="127.0.0.1", port=int(port), db=int(db))
    return BudgetedLLM(FakeBudget(client, prefix, tenant))

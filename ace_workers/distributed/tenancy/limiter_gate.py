"""The limiter as an LLM client's gate: one skillbook's calls, counted against its tenant.

A :class:`LimiterGate` is bound to a skillbook and looks up its tenant on every call
(through the process's CachedTenants, so a tenant change is seen within the cache's age).
Where nothing limits the call (no budget for the tenant and model, no provider limit, no
429 slowdown) it answers from memory and the call costs no Redis round trip.
"""

from __future__ import annotations

import functools
import logging
import math
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from ...providers.call_gate import Prompt, retry_after_of
from .errors import BudgetExhaustedError
from .limiter import Limiter, Reservation
from .spend_meter import SpendMeter
from .tenants import CachedTenants, Tenant

__all__ = [
    "DEFAULT_COMPLETION_TOKENS",
    "CompletionSizes",
    "LimiterGate",
    "Ticket",
    "estimate_tokens",
    "litellm_price",
    "priced_model",
]

logger = logging.getLogger(__name__)

# The completion a call is assumed to produce when it sets no max_tokens and none was seen yet.
DEFAULT_COMPLETION_TOKENS = 1024
# Once completions were seen: their running mean times this, so most calls settle at or below
# what they reserved (over-reserving stops a budget short; under-reserving lets it overshoot).
COMPLETION_MARGIN = 1.25
# The weight of each new completion in the running mean.
_MEAN_WEIGHT = 0.2

# A model's price: USD per prompt token and per completion token, or None when unknown.
Pricing = Callable[[str], tuple[float, float] | None]


@dataclass(frozen=True)
class Ticket:
    """What ``before`` hands back: the model, the tenant, and the reservation when the limiter was asked."""

    model: str
    reservation: Reservation | None = None
    tenant: str = ""


def estimate_tokens(prompt: Prompt, max_tokens: int | None) -> tuple[int, int]:
    """(prompt tokens, completion tokens) a call is expected to use: about four characters a token."""
    if isinstance(prompt, str):
        characters = len(prompt)
    else:
        characters = sum(len(str(message.get("content") or "")) for message in prompt)
    return max(1, characters // 4), max_tokens if max_tokens is not None else DEFAULT_COMPLETION_TOKENS


class CompletionSizes:
    """The completion tokens a model's calls use, as a running mean this process has seen.

    A budget reserves a call's estimate until it settles. With ``max_tokens`` (or 1024) as the
    completion's estimate a budget stops that far short of its limit: the simulator's calls
    use about a third of it, so a $3 budget stopped at $1.70-2.00. The mean of the completions
    seen, with a margin, stops within about one call of the limit.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._means: dict[str, float] = {}

    def estimate(self, model: str, max_tokens: int | None) -> int:
        """The completion tokens to reserve for a call to ``model`` allowed ``max_tokens``."""
        with self._lock:
            mean = self._means.get(model)
        if mean is None:
            return max_tokens if max_tokens is not None else DEFAULT_COMPLETION_TOKENS
        guess = math.ceil(mean * COMPLETION_MARGIN)
        return min(guess, max_tokens) if max_tokens is not None else guess

    def observe(self, model: str, completion_tokens: int) -> None:
        """A call to ``model`` produced ``completion_tokens``."""
        if completion_tokens <= 0:
            return
        with self._lock:
            mean = self._means.get(model)
            self._means[model] = (
                float(completion_tokens) if mean is None else mean + _MEAN_WEIGHT * (completion_tokens - mean)
            )


@functools.cache
def litellm_price(model: str) -> tuple[float, float] | None:
    """``model``'s price per prompt and completion token in litellm's bundled price table, if it has one."""
    from ...providers._lazy_imports import import_litellm

    try:
        entry = import_litellm().model_cost.get(model) or import_litellm().model_cost.get(
            model.split("/", 1)[-1]
        )
    except Exception as error:  # pricing is an estimate: never a reason to fail a call
        logger.debug("no price for %s: %s", model, error)
        return None
    if not isinstance(entry, Mapping):
        return None
    prompt, completion = entry.get("input_cost_per_token"), entry.get("output_cost_per_token")
    if not isinstance(prompt, int | float) or not isinstance(completion, int | float):
        return None
    return float(prompt), float(completion)


class LimiterGate:
    """The CallGate of one skillbook's LLM calls: reserve with the limiter before, settle after.

    Args:
        pricing: A model's price per token, for the cost estimate of a cost budget (the
            simulator's ACE_SIM_COST_PER_1K_TOKENS, else litellm's table).
        sizes: The completions seen so far, shared by the process's gates (the estimate's
            completion part); a gate of its own by default.
        meter: Where the usage of calls the limiter does not count goes (the process's one
            SpendMeter); None: those calls are not metered.
    """

    def __init__(
        self,
        limiter: Limiter,
        tenants: CachedTenants,
        skillbook: str,
        *,
        pricing: Pricing = litellm_price,
        sizes: CompletionSizes | None = None,
        meter: SpendMeter | None = None,
    ) -> None:
        self.limiter = limiter
        self.tenants = tenants
        self.skillbook = skillbook
        self.pricing = pricing
        self.sizes = sizes if sizes is not None else CompletionSizes()
        self.meter = meter

    def __repr__(self) -> str:
        return f"LimiterGate(skillbook={self.skillbook!r})"

    def before(self, model: str, prompt: Prompt, max_tokens: int | None) -> Ticket:
        """Reserve the call with the fleet's limiter (waiting for the model's pace) unless nothing limits it.

        Raises:
            BudgetExhaustedError: the skillbook's tenant has spent its budget for ``model``.
            ProviderBusyError: the model's shared pace would keep the call waiting too long.
        """
        tenant = self.tenants.get(self.tenants.tenant_of(self.skillbook))
        try:
            return self._reserve(tenant, model, prompt, max_tokens)
        except BudgetExhaustedError:
            # The process's tenants may be older than a raise (CachedTenants' max age): the samples
            # ``tenant set`` released would be refused by the old budget and parked again, to wait
            # for the next reconciliation. One look at the tenants' version before refusing.
            self.tenants.forget()
            fresh = self.tenants.get(self.tenants.tenant_of(self.skillbook))
            if fresh == tenant:
                raise
            logger.info("tenant %r changed: the refused call is asked for again", fresh.name)
            return self._reserve(fresh, model, prompt, max_tokens)

    def _reserve(self, tenant: Tenant, model: str, prompt: Prompt, max_tokens: int | None) -> Ticket:
        if not self.limiter.applies(tenant, model):
            return Ticket(model, tenant=tenant.name)
        prompt_tokens, _ = estimate_tokens(prompt, max_tokens)
        completion_tokens = self.sizes.estimate(model, max_tokens)
        cost = 0.0
        if any(b.cost_per_day is not None or b.cost_per_month is not None for b in tenant.budget_for(model)):
            price = self.pricing(model)
            if price is not None:
                cost = prompt_tokens * price[0] + completion_tokens * price[1]
        reservation = self.limiter.acquire(tenant, model, prompt_tokens + completion_tokens, cost)
        return Ticket(model, reservation, tenant.name)

    def after(self, ticket: Ticket, usage: Mapping[str, int] | None, cost: float | None) -> None:
        """Settle the reservation with the call's usage (its estimate where the call did not say);
        without one, meter the usage for the tenant (the limiter did not count it)."""
        if usage is not None:
            self.sizes.observe(ticket.model, int(usage.get("completion_tokens") or 0))
        tokens = _total_tokens(usage)
        if ticket.reservation is None:
            if self.meter is not None:
                self.meter.add(ticket.tenant, ticket.model, tokens, cost or 0.0)
            return
        if usage is None:
            self.limiter.release(ticket.reservation)
            return
        self.limiter.settle(ticket.reservation, tokens or None, cost)

    def rate_limited(self, ticket: Ticket, error: BaseException) -> None:
        """A 429: release the reservation and slow the model down for the whole fleet."""
        if ticket.reservation is not None:
            self.limiter.release(ticket.reservation)
        self.limiter.rate_limited(ticket.model, retry_after_of(error))


def _total_tokens(usage: Mapping[str, int] | None) -> int:
    """The tokens a call used, as its usage says (0 when it says nothing)."""
    if usage is None:
        return 0
    total = usage.get("total_tokens") or usage.get("prompt_tokens", 0) + usage.get("completion_tokens", 0)
    return int(total)


def priced_model(name: str, cost_per_1k_tokens: float, fallback: Pricing = litellm_price) -> Pricing:
    """Pricing with model ``name`` (the simulator) at ``cost_per_1k_tokens``, other models by ``fallback``."""

    def price(model: str) -> tuple[float, float] | None:
        if model == name:
            per_token = cost_per_1k_tokens / 1000
            return (per_token, per_token) if per_token > 0 else None
        return fallback(model)

    return price

"""How long a step waits before its next delivery: exponential backoff with jitter.

Without jitter, samples rate-limited together retry together, and are rate-limited
together again. Each wait is drawn between half and one and a half times the
exponential step, so the mean is unchanged and the bound is known.
"""

from __future__ import annotations

import math
import random

__all__ = ["JITTER", "broker_countdown", "retry_countdown", "total_backoff_bound"]

# A wait is the exponential step times a factor drawn from [1 - JITTER, 1 + JITTER).
JITTER = 0.5


def retry_countdown(retries: int, backoff_seconds: float, rng: random.Random | None = None) -> float:
    """Seconds before retry ``retries + 1``: ``backoff * 2**retries``, jittered by +-JITTER."""
    draw = (rng or random).random()
    # The exponent capped: a caller counting waits without end (a Redis full for hours) would
    # otherwise overflow a float (2.0**1024); its own cap on the wait is reached long before.
    return float(backoff_seconds * 2.0 ** min(retries, 64) * (1 - JITTER + 2 * JITTER * draw))


def total_backoff_bound(max_retries: int, backoff_seconds: float, *, amqp: bool = False) -> float:
    """The longest all ``max_retries`` waits of one step can add up to, as the broker counts them."""
    longest = (backoff_seconds * 2.0**retries * (1 + JITTER) for retries in range(max_retries))
    return float(sum(broker_countdown(wait, amqp=amqp) for wait in longest))


def broker_countdown(seconds: float, *, amqp: bool) -> float:
    """A countdown the broker can honour: RabbitMQ's delayed delivery counts whole seconds, from 1.

    (It truncates, and refuses 0: a shorter retry would be rejected and its message dropped.)
    """
    return float(max(1, math.ceil(seconds))) if amqp else seconds

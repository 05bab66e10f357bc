"""Waiting on a condition instead of sleeping a fixed time: the suite's one polling loop.

Every test and helper that waits for something polls through ``wait_for``;
``tests/architecture/test_no_deadline_loops.py`` fails on a hand-written
``time.monotonic()`` deadline loop anywhere else under ``tests/``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


class WaitTimeout(AssertionError):
    """A condition ``wait_for`` polled never held within its timeout.

    An ``AssertionError`` (a plain ``Exception``, unlike ``pytest.fail``'s), so the drills
    that run outside pytest (``benchmarks/drills.py``) report it like any other failure.
    """


def wait_for(
    check: Callable[[], T],
    timeout: float,
    what: str,
    *,
    every: float = 0.02,
    detail: Callable[[], object] | None = None,
) -> T:
    """Poll ``check()`` until it returns something truthy and return it.

    On timeout raise ``WaitTimeout`` naming ``what``; ``detail()``, read then, is appended
    (a log's tail, the last status), so the failure says where things stood. An exception
    ``check`` raises (a process that exited, say) ends the wait at once.
    """
    __tracebackhide__ = True  # pytest shows the caller's line, not this loop's
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            message = f"timed out after {timeout:g} s waiting for {what}"
            if detail is not None:
                message += f"; {detail()}"
            raise WaitTimeout(message)
        time.sleep(every)

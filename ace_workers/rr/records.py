"""The record of one Recursive Reflector run, as ``ReflectorOutput.raw["rr_trace"]`` holds it.

The shape is a contract with the observability step (``RROpikStep``)::

    {"iterations": [{"iteration": 1, "code": str, "stdout": str, "stderr": str,
                     "error": str | None, "final_called": bool, "killed": str | None,
                     "duration_s": float}, ...],
     "iterations_used": int, "max_iterations": int, "final_called": bool}

``final_called`` of an iteration says its code called FINAL (valid or not);
the top-level one says the run ended with a valid FINAL reflection.
``duration_s`` is the iteration's wall time: LLM call, sandbox run and validation.
"""

from __future__ import annotations

from typing import TypedDict

__all__ = ["RR_TRACE_KEY", "RRIteration", "RRTrace", "make_rr_trace"]

RR_TRACE_KEY = "rr_trace"


class RRIteration(TypedDict):
    """One turn: the code the LLM wrote and what running it did."""

    iteration: int
    code: str
    stdout: str
    stderr: str
    error: str | None
    final_called: bool
    killed: str | None
    duration_s: float


class RRTrace(TypedDict):
    """A whole run: its turns, and whether it ended with a valid FINAL."""

    iterations: list[RRIteration]
    iterations_used: int
    max_iterations: int
    final_called: bool


def make_rr_trace(iterations: list[RRIteration], max_iterations: int, *, final_called: bool) -> RRTrace:
    """The run record of ``iterations``."""
    return {
        "iterations": list(iterations),
        "iterations_used": len(iterations),
        "max_iterations": max_iterations,
        "final_called": final_called,
    }

"""The Recursive Reflector: reflection by code the LLM writes and a process sandbox runs.

:class:`RRStep` is a drop-in :class:`~ace_workers.protocols.ReflectorLike`
(and a pipeline step); :class:`Sandbox` runs each code block in a fresh,
resource-limited, guarded interpreter. See :mod:`ace_workers.rr.sandbox` for
what the sandbox does and what an operator should add for real isolation.
"""

from .config import RRConfig
from .opik import RROpikStep
from .prompts import RR_PROMPT, RR_TITLE
from .records import RR_TRACE_KEY, RRIteration, RRTrace
from .runner import RRStep
from .sandbox import KILLED_CPU, KILLED_MEMORY, KILLED_TIMEOUT, Sandbox, SandboxLimits, SandboxResult

__all__ = [
    # the reflector
    "RRStep",
    "RRConfig",
    "RR_PROMPT",
    "RR_TITLE",
    # its run record (ReflectorOutput.raw["rr_trace"])
    "RR_TRACE_KEY",
    "RRIteration",
    "RRTrace",
    # the sandbox
    "Sandbox",
    "SandboxLimits",
    "SandboxResult",
    "KILLED_TIMEOUT",
    "KILLED_MEMORY",
    "KILLED_CPU",
    # observability
    "RROpikStep",
]

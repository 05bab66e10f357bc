"""The Recursive Reflector: reflection by code the LLM writes and a process sandbox runs.

:class:`RRStep` is a drop-in :class:`~ace_workers.protocols.ReflectorLike`
(and a pipeline step); :class:`Sandbox` runs each code block in a fresh,
resource-limited, guarded interpreter behind an OS boundary (bubblewrap
namespaces, uid 65534, seccomp). See :mod:`ace_workers.rr.sandbox` and
:mod:`ace_workers.rr.boundary` for what each layer does and needs.
"""

from ..errors import SandboxUnavailableError
from .boundary import find_boundary
from .config import RRConfig
from .opik import RROpikStep
from .prompts import RR_PROMPT, RR_TITLE
from .records import RR_TRACE_KEY, RRIteration, RRTrace
from .runner import RRStep
from .sandbox import (
    KILLED_CPU,
    KILLED_MEMORY,
    KILLED_TIMEOUT,
    Isolation,
    Sandbox,
    SandboxLimits,
    SandboxResult,
)

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
    # its isolation
    "Isolation",
    "find_boundary",
    "SandboxUnavailableError",
    # observability
    "RROpikStep",
]

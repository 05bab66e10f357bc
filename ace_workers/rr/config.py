"""RRConfig: how far the Recursive Reflector may go, and what its sandbox may use."""

from __future__ import annotations

from dataclasses import dataclass, field

from .sandbox import Isolation, SandboxLimits

__all__ = ["RRConfig"]


@dataclass(frozen=True)
class RRConfig:
    """The Recursive Reflector's settings; an unknown option fails at construction.

    Args:
        max_iterations: LLM turns (each one code block run in the sandbox)
            before the reflector gives up with RecursiveReflectorError.
        limits: What each sandbox run may use (timeout, memory, CPU, output).
        max_trace_chars: Characters of the rendered trace shown in the prompt;
            the code always gets the whole trace as ``trace``.
        max_observation_chars: Characters of each iteration's stdout, stderr
            and error fed back to the LLM.
        isolation: What stands between the code and the host: the OS boundary
            (the default; without it the reflector refuses to be built), or
            ``Isolation.OS_OR_GUARDS`` to fall back to the in-process guards.
    """

    max_iterations: int = 10
    limits: SandboxLimits = field(default_factory=SandboxLimits)
    max_trace_chars: int = 4_000
    max_observation_chars: int = 4_000
    isolation: Isolation = Isolation.OS

    def __post_init__(self) -> None:
        for name in ("max_iterations", "max_trace_chars", "max_observation_chars"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be an int >= 1, got {value!r}")
        if not isinstance(self.limits, SandboxLimits):
            raise TypeError(f"limits must be a SandboxLimits, got {type(self.limits).__name__}")
        if not isinstance(self.isolation, Isolation):
            raise TypeError(f"isolation must be an Isolation, got {self.isolation!r}")

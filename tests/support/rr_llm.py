"""An LLM factory (ACE_LLM_FACTORY) for the Recursive Reflector on workers: a hostile first turn.

Its first reply to each Recursive Reflector run is code the sandbox must kill
(an allocation bomb or an endless loop) or stop (``rr-redis-PORT``: a write into
the Redis on 127.0.0.1:PORT through the raw socket class); after that it
answers as the simulated LLM does, so every sample can still learn.
"""

from __future__ import annotations

from typing import Any

from ace_workers.rr.prompts import NO_ITERATIONS, RR_TITLE
from ace_workers.sim import SimulatedLLM
from ace_workers.sim.llm import SimulatedCompletion
from tests.support.sandbox import redis_escape_code

HOSTILE_CODE = {
    "rr-bomb": "blob = bytearray(10**10)",
    "rr-loop": "while True:\n    pass",
}
ESCAPED_KEY = "rr-escaped"  # what rr-redis-PORT's code tries to set


class HostileFirstTurn(SimulatedLLM):
    """The simulated LLM, but a Recursive Reflector run's first turn is ``code``."""

    def __init__(self, code: str) -> None:
        super().__init__(trust_threshold=0)
        self.code = code

    def complete(self, prompt: str, **kwargs: Any) -> SimulatedCompletion:
        if prompt.startswith(RR_TITLE + "\n") and f"\n{NO_ITERATIONS}\n" in prompt:
            return SimulatedCompletion(text=f"```python\n{self.code}\n```", raw={})
        return super().complete(prompt, **kwargs)


def hostile_llm(model: str) -> SimulatedLLM:
    """The hostile reflector for the models of HOSTILE_CODE, the plain simulator for any other."""
    code = HOSTILE_CODE.get(model)
    if model.startswith("rr-redis-"):
        code = redis_escape_code(int(model.removeprefix("rr-redis-")), ESCAPED_KEY)
    return HostileFirstTurn(code) if code else SimulatedLLM(trust_threshold=0)

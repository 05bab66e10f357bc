"""AgentStep: the agent answers the sample's question with the skillbook in its prompt."""

from __future__ import annotations

from ..core.context import ACEStepContext
from ..protocols import AgentLike
from ._checks import require_field, require_sample

__all__ = ["AgentStep"]


class AgentStep:
    """Call the agent on ``ctx.sample`` with the read-only skillbook view; provide ``agent_output``."""

    # On the fleet it is served the version of the sample's label (distributed/worker/serving.py).
    serves_skillbook = True
    requires = frozenset({"sample", "skillbook"})
    provides = frozenset({"agent_output"})

    def __init__(self, agent: AgentLike) -> None:
        self.agent = agent

    def __call__(self, ctx: ACEStepContext) -> ACEStepContext:
        sample = require_sample(ctx.sample, "AgentStep")
        agent_output = self.agent.generate(
            question=sample.question,
            context=sample.context,
            skillbook=require_field(ctx.skillbook, "AgentStep", "skillbook"),
            sample=sample,
        )
        return ctx.replace(agent_output=agent_output)

    def __repr__(self) -> str:
        return f"AgentStep({self.agent!r})"

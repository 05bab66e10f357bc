"""EvaluateStep: bundle the sample and the agent's answer into the trace the learning tail reads."""

from __future__ import annotations

from typing import Any, cast

from ..core.context import ACEStepContext
from ..core.environments import Sample, TaskEnvironment
from ._checks import require_field, require_sample

__all__ = ["OUTCOME", "SERVED_LABEL", "SERVED_VERSION", "EvaluateStep"]

# Metadata key: "success" or "failure", the environment's verdict when it measured ``accuracy``
# (1.0 is a success). Read on the fleet to count, per serving label, how often it succeeded
# (distributed/worker/serving.py, live A/B); absent when the environment judged nothing.
OUTCOME = "outcome"
# Metadata keys: the skillbook version and label (None: the head) that served the agent, set on
# the fleet where the agent step runs (distributed/worker/serving.py); copied into the trace, so
# the Reflector and whoever reads a trace knows which version produced it.
SERVED_VERSION = "served_version"
SERVED_LABEL = "served_label"


class EvaluateStep:
    """Provide ``trace``: question, context, ground truth, the answer, and an environment's feedback.

    The environment is optional and injected here, not carried on the context,
    so the context stays free of per-runner dependencies. Without one the
    trace has no ``feedback`` key and the Reflector learns from the rest. An
    environment that measures ``accuracy`` also puts its verdict in the
    metadata under :data:`OUTCOME`.
    """

    requires = frozenset({"sample", "agent_output"})
    provides = frozenset({"trace"})

    def __init__(self, environment: TaskEnvironment | None = None) -> None:
        self.environment = environment

    def __call__(self, ctx: ACEStepContext) -> ACEStepContext:
        sample = require_sample(ctx.sample, "EvaluateStep")
        agent_output = require_field(ctx.agent_output, "EvaluateStep", "agent_output")
        trace: dict[str, Any] = {
            "question": sample.question,
            "context": sample.context,
            "ground_truth": sample.ground_truth,
            "reasoning": agent_output.reasoning,
            "answer": agent_output.final_answer,
            "skill_ids": list(agent_output.skill_ids),
        }
        if SERVED_VERSION in ctx.metadata:
            trace[SERVED_VERSION] = ctx.metadata[SERVED_VERSION]
            trace[SERVED_LABEL] = ctx.metadata.get(SERVED_LABEL)
        if self.environment is not None:
            # TaskEnvironment.evaluate is annotated with Sample; any ACESample has what it reads.
            result = self.environment.evaluate(sample=cast(Sample, sample), agent_output=agent_output)
            trace["feedback"] = result.feedback
            accuracy = result.metrics.get("accuracy")
            if accuracy is not None:
                outcome = "success" if accuracy >= 1.0 else "failure"
                return ctx.replace(trace=trace, metadata={**ctx.metadata, OUTCOME: outcome})
        return ctx.replace(trace=trace)

    def __repr__(self) -> str:
        return f"EvaluateStep({self.environment!r})"

"""OpenClaw: learn from the agent's recorded sessions (JSONL event files); needs no extra.

Use :class:`~ace_workers.steps.LoadTracesStep` then :class:`OpenClawToTraceStep`
before a learning tail, :func:`openclaw_events_to_trace` on events you read
yourself, or ``ace-workers enqueue --format openclaw`` for the fleet.
"""

from ...traces.openclaw import OpenClawToTraceStep, openclaw_events_to_trace

__all__ = ["OpenClawToTraceStep", "openclaw_events_to_trace"]

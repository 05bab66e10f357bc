"""OpenClaw session files (JSONL events) as traces."""

from .to_trace import OpenClawToTraceStep, openclaw_events_to_trace

__all__ = ["OpenClawToTraceStep", "openclaw_events_to_trace"]

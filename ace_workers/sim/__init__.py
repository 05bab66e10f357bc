"""SIMULATION: an offline, deterministic stand-in for an LLM and a task family to learn.

Used by the tests, the demo and the benchmarks; never by production code.
:class:`SimulatedLLM` reads the real role prompts and answers as a model
that learns the hidden rules of :data:`TOPICS` from the skillbook would;
:func:`misleading_traces` teach it each topic's wrong rule instead, a harmful
skill that makes the agent answer wrong.
"""

from .behaviour import SimWorld
from .llm import SimulatedCompletion, SimulatedLLM
from .tasks import TOPICS, Topic, failure_traces, find_task, find_topic, make_tasks, misleading_traces

__all__ = [
    # the simulated client
    "SimulatedLLM",
    "SimulatedCompletion",
    "SimWorld",
    # the synthetic task family
    "Topic",
    "TOPICS",
    "make_tasks",
    "failure_traces",
    "misleading_traces",
    "find_task",
    "find_topic",
]

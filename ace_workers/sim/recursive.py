"""SIMULATION: what the simulated LLM answers to the Recursive Reflector's prompt.

Two turns, so the simulation goes through the sandbox for real:

1. With no iteration yet, it replies with code that prints the sandbox's
   ``question``, ``answer``, ``ground_truth`` and ``feedback`` variables as
   one JSON line after :data:`SIM_MARKER`.
2. Once an iteration's output holds that line, it rebuilds a Reflector-style
   text from what the sandbox printed (plus the prompt's Cited skills and
   Trace preview), decides the reflection with
   :func:`~ace_workers.sim.behaviour.simulate_reflector` -- the same one a
   single-pass Reflector gets -- and replies with code calling ``FINAL`` on it.

If the printed line is missing or cut, the prompt's own sections (the same
inputs) are used instead. Pure: no state, no randomness.
"""

from __future__ import annotations

import json

from ..rr.prompts import NO_ITERATIONS
from .behaviour import SimWorld, simulate_reflector
from .parsing import parse_sections, section_value

__all__ = ["SIM_MARKER", "simulate_recursive_reflector"]

SIM_MARKER = "SIM-INPUTS "
INSPECT_CODE = f"""\
import json
print({SIM_MARKER!r} + json.dumps({{
    "question": question, "answer": answer, "ground_truth": ground_truth, "feedback": feedback,
}}))
"""
_FIELDS = {
    "question": "Question",
    "answer": "Agent answer",
    "ground_truth": "Ground truth",
    "feedback": "Feedback",
}


def _printed_inputs(iterations: str) -> dict[str, str] | None:
    """The inputs the inspection code printed, from the latest iteration that shows them."""
    start = iterations.rfind(SIM_MARKER)
    if start < 0:
        return None
    line = iterations[start + len(SIM_MARKER) :].split("\n", 1)[0]
    try:
        data = json.loads(line)
    except ValueError:
        return None
    return {key: str(data.get(key) or "") for key in _FIELDS} if isinstance(data, dict) else None


def _reflector_text(inputs: dict[str, str], sections: dict[str, str]) -> str:
    """A Reflector-prompt-shaped text simulate_reflector can read."""
    parts = [f"## {heading}\n{inputs[key] or '(none)'}" for key, heading in _FIELDS.items()]
    for heading in ("Cited skills", "Trace"):
        parts.append(f"## {heading}\n{section_value(sections, heading) or '(none)'}")
    return "\n\n".join(parts) + "\n"


def simulate_recursive_reflector(prompt: str, world: SimWorld) -> str:
    """The reply to a Recursive Reflector prompt: inspection code first, then a FINAL call."""
    sections = parse_sections(prompt)
    iterations = sections.get("Iterations", "")
    if iterations.strip() == NO_ITERATIONS:
        return f"Let me look at the inputs first.\n```python\n{INSPECT_CODE}```\n"
    inputs = _printed_inputs(iterations)
    if inputs is None:
        inputs = {key: section_value(sections, heading) for key, heading in _FIELDS.items()}
    reflection = simulate_reflector(_reflector_text(inputs, sections), world)
    payload = reflection.model_dump_json(exclude={"raw"})
    return f"```python\nimport json\nFINAL(json.loads({payload!r}))\n```\n"

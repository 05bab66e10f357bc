"""The Recursive Reflector's prompt, and how earlier iterations are shown in it.

The template opens with the title line ``# Recursive reflector`` (the
simulated LLM recognises the prompt by it) and keeps the Reflector's input
sections -- Question, Agent reasoning, Agent answer, Ground truth, Feedback,
Cited skills, Trace -- under the same ``## Heading`` lines, so a reader (or
the simulator) finds them where the single-pass prompt has them.

Placeholders of ``RR_PROMPT``: current_date, timeout_s, memory_mb,
max_observation_chars, max_iterations, question, reasoning, final_answer,
ground_truth, feedback, skillbook_excerpt, trace, iterations.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..roles.prompts import REFLECTION_INPUTS

if TYPE_CHECKING:
    from .records import RRIteration

__all__ = ["ITERATION_HEADING", "NO_ITERATIONS", "RR_PROMPT", "RR_TITLE", "render_iterations"]

RR_TITLE = "# Recursive reflector"
ITERATION_HEADING = "### Iteration {number}"
NO_ITERATIONS = "(none yet: write your first code block)"

RR_PROMPT = (
    RR_TITLE
    + """
Date: {current_date}. Diagnose one attempt by an agent and extract lessons that transfer to \
similar tasks. You work by writing Python code: a sandbox runs it, you read what it printed, \
and you write more code until you call FINAL with your reflection.

## Sandbox
- Reply with exactly one ```python code block per turn; text outside it is ignored.
- Each block runs in a fresh Python process: nothing persists between turns, so recompute \
what you need. No network, no files outside its own directory, no subprocesses; \
{timeout_s:g} s and {memory_mb} MB per run. The standard library (json, re, collections, \
statistics, itertools, textwrap, ...) can be imported.
- Variables: `trace` (the raw trace record: dict, list, str; when there is none, a dict of the \
fields below), `question`, `reasoning`, `answer`, `ground_truth`, `feedback` (str, "" when \
unknown), `skill_ids` (list of the skill ids the agent cited), `skillbook` (the whole \
skillbook as a table, str).
- `print(...)` to inspect: the output, cut to {max_observation_chars} characters, is shown to \
you under Iterations in the next turn, with any error.
- `FINAL(reflection)` ends the analysis: `reflection` is a dict with the keys of the Output \
section. It is validated; if it is invalid, the error is shown to you in the next turn.
- You have {max_iterations} turns in all; call FINAL before they run out.
"""
    + REFLECTION_INPUTS
    + """
## Instructions
1. Decide if the answer is right: ground truth or feedback decide; with neither, judge the \
reasoning (or the trace). Inspect the trace with code rather than guessing.
2. If wrong: what went wrong, its root cause, the correct approach.
3. key_insight: the single most reusable lesson. extracted_learnings: atomic imperative \
sentences stating the general rule, not this instance's values.
4. skill_tags: tag each cited skill helpful, harmful or neutral by its effect on this outcome; \
use only ids listed under Cited skills.

## Output
FINAL({{"reasoning": str, "error_identification": str, "root_cause_analysis": str, \
"correct_approach": str, "key_insight": str, "extracted_learnings": [{{"learning": str, \
"atomicity_score": float, "evidence": str}}], "skill_tags": [{{"id": str, "tag": str}}]}})
Only "reasoning" is required.

## Iterations
{iterations}
"""
)


def _cut(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return f"{text[:limit]}\n... (cut at {limit} of {len(text)} characters)"


def render_iterations(iterations: Sequence[RRIteration], max_chars: int) -> str:
    """The Iterations section: each turn's code and what running it showed, outputs cut to ``max_chars``."""
    if not iterations:
        return NO_ITERATIONS
    blocks = []
    for item in iterations:
        lines = [ITERATION_HEADING.format(number=item["iteration"])]
        if item["code"]:
            lines += ["Code:", "```python", item["code"].rstrip("\n"), "```"]
        lines += [
            "Output:",
            "```text",
            _cut(item["stdout"], max_chars).rstrip("\n") or "(nothing printed)",
            "```",
        ]
        if item["stderr"].strip():
            lines += ["Stderr:", "```text", _cut(item["stderr"], max_chars).rstrip("\n"), "```"]
        if item["error"]:
            lines.append(f"Error: {_cut(item['error'], max_chars)}")
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)

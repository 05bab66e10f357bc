"""The demo job: ACE learns the hidden rules of a synthetic task family, in-process.

It uses the SIMULATED LLM (``ace_workers.sim``), so it runs offline: the agent
fails questions until the skillbook holds a trusted skill stating the topic's
rule, then answers them correctly. The simulated LLM is deterministic, but
learning runs in the background while answers are produced, so the middle
epochs' accuracy varies a little from run to run; the last epoch reaches 100%.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from pipeline import SampleResult

from .core import ACEStepContext, SimpleEnvironment, Skillbook
from .counts import counted
from .roles import Agent, Reflector, SkillManager
from .runners import ACE
from .sim import SimulatedLLM, make_tasks

__all__ = ["DemoReport", "run_demo"]


@dataclass
class DemoReport:
    """What the demo measured."""

    accuracy_by_epoch: list[float]
    skills: int
    failed_samples: int
    seconds: float
    learning: dict[str, int] = field(default_factory=dict)
    skillbook: Skillbook = field(default_factory=Skillbook)

    def to_dict(self) -> dict[str, Any]:
        """The report as JSON-ready data (``--json``), the learned skillbook in full."""
        return {
            "accuracy_by_epoch": self.accuracy_by_epoch,
            "skills": self.skills,
            "failed_samples": self.failed_samples,
            "seconds": round(self.seconds, 3),
            "learning": self.learning,
            "skillbook": self.skillbook.to_dict(),
        }


def _accuracy(results: list[SampleResult[ACEStepContext]], epoch: int) -> float:
    answered = [r.output for r in results if r.output is not None and r.output.epoch == epoch]
    correct = [
        ctx
        for ctx in answered
        if ctx.agent_output is not None
        and ctx.sample is not None
        and ctx.agent_output.final_answer == ctx.sample.ground_truth
    ]
    return len(correct) / len(answered) if answered else 0.0


def run_demo(
    *,
    samples: int = 30,
    topics: int = 5,
    epochs: int = 3,
    seed: int = 7,
    save: Path | None = None,
    console: Console | None = None,
) -> DemoReport:
    """Run ACE with the simulated LLM and print per-epoch accuracy and the learned skillbook.

    A long line is never broken by the console (soft wrap): a skill stays one line when piped.
    """
    console = console or Console(soft_wrap=True)
    # trust_threshold=3: the simulated agent relies on a rule only once it earned 3 helpful votes.
    llm = SimulatedLLM(seed=seed, trust_threshold=3)
    tasks = make_tasks(samples, seed=seed, topics=topics)
    ace = ACE.from_roles(
        agent=Agent(llm),
        reflector=Reflector(llm),
        skill_manager=SkillManager(llm),
        environment=SimpleEnvironment(),
    )
    console.print(
        f"[bold]ACE demo[/] - simulated LLM, {samples} synthetic tasks over {topics} topics with "
        f"hidden rules, {epochs} epochs"
    )
    console.print(f"pipeline: {ace.pipeline!r}\n")

    start = time.perf_counter()
    results = ace.run(tasks, epochs=epochs)
    seconds = time.perf_counter() - start
    accuracy = [_accuracy(results, epoch) for epoch in range(1, epochs + 1)]

    table = Table("epoch", "accuracy", "")
    for epoch, value in enumerate(accuracy, start=1):
        table.add_row(str(epoch), f"{value:6.1%}", "#" * round(value * 30))
    console.print(table)
    console.print(
        "Answers come back from the foreground while reflection and skill updates run in the "
        "background, and each epoch starts once the previous epoch's learning is applied."
    )
    failed = [r for r in results if not r.ok]
    learning = ace.learning_stats
    console.print(
        f"{counted(len(results), 'sample')} in {seconds:.2f} s, {len(failed)} failed; "
        f"learning: {_describe_learning(learning)}\n"
    )
    console.print(ace.skillbook.as_markdown(), markup=False)
    if save is not None:
        ace.save(save)
        console.print(f"skillbook saved to {save}")
    return DemoReport(accuracy, len(ace.skillbook), len(failed), seconds, learning, ace.skillbook)


def _describe_learning(stats: dict[str, int]) -> str:
    """The background learning's counts in words, e.g. '20 reflections applied, none failed'."""
    failed = stats.get("failed", 0)
    text = f"{counted(stats.get('completed', 0), 'reflection')} applied, {failed or 'none'} failed"
    if stats.get("active"):
        text += f", {stats['active']} still running"
    return text

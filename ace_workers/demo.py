"""A small, self-contained pipeline run that shows what the engine does.

An "agent" answers arithmetic questions in the foreground; from the async
boundary on, a "reflect" step checks each answer against the ground truth and
a single-writer "learn" step records lessons, in the background. This is the
shape of the ACE learning pipeline, with plain Python in place of LLM calls.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from rich.console import Console
from rich.table import Table

from pipeline import Pipeline, SampleResult, StepContext

__all__ = ["DemoContext", "build_demo_pipeline", "run_demo"]


@dataclass(frozen=True)
class DemoContext(StepContext):
    """One question flowing through the demo pipeline."""

    question: str = ""
    ground_truth: int = 0
    answer: int | None = None
    verdict: str | None = None


class Answer:
    """Foreground: a deliberately sloppy agent that gets multiplication wrong."""

    requires = frozenset({"question"})
    provides = frozenset({"answer"})

    def __call__(self, ctx: DemoContext) -> DemoContext:
        left, op, right = ctx.question.split()
        a, b = int(left), int(right)
        return ctx.replace(answer=a + b if op == "+" else a * b + (1 if a > 5 else 0))


class Reflect:
    """Background, up to 3 at once: compare the answer with the ground truth."""

    requires = frozenset({"answer", "ground_truth"})
    provides = frozenset({"verdict"})
    async_boundary = True
    max_workers = 3

    def __call__(self, ctx: DemoContext) -> DemoContext:
        time.sleep(0.05)  # stands in for an LLM call
        return ctx.replace(verdict="correct" if ctx.answer == ctx.ground_truth else "wrong")


class Learn:
    """Background, one at a time: record a lesson for every wrong answer.

    ``max_workers`` defaults to 1, so the engine never runs two Learn calls at
    once and the shared list needs no lock of its own.
    """

    requires = frozenset({"verdict", "question"})
    provides: frozenset[str] = frozenset()

    def __init__(self, lessons: list[str]) -> None:
        self.lessons = lessons

    def __call__(self, ctx: DemoContext) -> DemoContext:
        if ctx.verdict == "wrong":
            self.lessons.append(f"double-check products like {ctx.question}")
        return ctx


def build_demo_pipeline(lessons: list[str]) -> Pipeline[DemoContext]:
    """Answer in the foreground; Reflect and Learn in the background."""
    return Pipeline([Answer(), Reflect(), Learn(lessons)])


def _questions() -> list[DemoContext]:
    pairs = [(2, "+", 3), (4, "*", 5), (7, "*", 8), (9, "+", 9), (6, "*", 7), (3, "*", 3)]
    return [
        DemoContext(sample=i, question=f"{a} {op} {b}", ground_truth=a + b if op == "+" else a * b)
        for i, (a, op, b) in enumerate(pairs)
    ]


def run_demo(console: Console | None = None) -> list[SampleResult[DemoContext]]:
    """Run the demo pipeline and print what happened in the foreground and background."""
    console = console or Console()
    lessons: list[str] = []
    pipeline = build_demo_pipeline(lessons)
    console.print(f"[bold]pipeline[/]: {pipeline!r}  (requires {sorted(pipeline.requires)})")

    start = time.perf_counter()
    results = pipeline.run(_questions())
    answered = time.perf_counter() - start
    console.print(
        f"answers back in {answered * 1000:.1f} ms; background learning: {pipeline.background_stats()}"
    )
    pipeline.wait_for_background(timeout=30)
    console.print(f"learning done after {(time.perf_counter() - start) * 1000:.1f} ms")

    table = Table("sample", "question", "answer", "truth", "verdict")
    for result in results:
        out = result.output
        if out is None:
            table.add_row(str(result.sample), "-", "-", "-", f"failed at {result.failed_at}: {result.error}")
        else:
            table.add_row(
                str(result.sample), out.question, str(out.answer), str(out.ground_truth), out.verdict
            )
    console.print(table)
    console.print(f"[bold]lessons learned[/] ({len(lessons)}):")
    for lesson in lessons:
        console.print(f"  - {lesson}")
    return results

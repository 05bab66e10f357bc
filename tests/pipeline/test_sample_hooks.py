"""before_sample/after_sample: once per sample, around all its steps, in a context of its own."""

from __future__ import annotations

import contextvars
import threading
from typing import Any

from pipeline import Pipeline, PipelineHook, SampleResult
from tests.support.pipeline import Ctx, make_step

# What a hook sets for its sample and the sample's steps read back.
CURRENT_SAMPLE: contextvars.ContextVar[int] = contextvars.ContextVar("current_sample", default=-1)


class SampleRecorder(PipelineHook):
    """Marks each sample with its x in a ContextVar, and records the hook calls in order."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, int]] = []
        self.results: list[SampleResult[Any]] = []
        self._lock = threading.Lock()

    def before_sample(self, ctx: Any) -> None:
        CURRENT_SAMPLE.set(ctx.x)
        with self._lock:
            self.calls.append(("before_sample", ctx.x))

    def before_step(self, name: str, ctx: Any) -> None:
        with self._lock:
            self.calls.append((name, ctx.x))

    def after_sample(self, result: Any) -> None:
        with self._lock:
            self.calls.append(("after_sample", CURRENT_SAMPLE.get()))
            self.results.append(result)


def seen_sample(name: str, **attrs: Any) -> Any:
    """A step that records the sample its context says it runs for."""
    return make_step(
        name,
        {"trail"},
        {"trail"},
        lambda ctx: ctx.replace(trail=(*ctx.trail, f"{name}:{CURRENT_SAMPLE.get()}")),
        **attrs,
    )


def test_sample_hooks_wrap_every_step_of_each_sample_once() -> None:
    hook = SampleRecorder()
    pipe: Pipeline[Ctx] = Pipeline([seen_sample("First"), seen_sample("Second")], hooks=[hook])
    results = pipe.run([Ctx(x=1), Ctx(x=2)])
    assert [r.output.trail for r in results] == [("First:1", "Second:1"), ("First:2", "Second:2")]
    per_sample = {x: [name for name, seen in hook.calls if seen == x] for x in (1, 2)}
    assert per_sample[1] == ["before_sample", "First", "Second", "after_sample"]
    assert per_sample[2] == ["before_sample", "First", "Second", "after_sample"]


def test_a_background_tail_keeps_its_samples_context_and_ends_with_after_sample() -> None:
    hook = SampleRecorder()
    pipe: Pipeline[Ctx] = Pipeline(
        [seen_sample("Foreground"), seen_sample("Background", async_boundary=True), seen_sample("Last")],
        hooks=[hook],
    )
    pipe.run([Ctx(x=x) for x in range(1, 5)], workers=2)
    pipe.wait_for_background(timeout=10)
    # Each sample's background steps saw the value its own before_sample set, and no other.
    assert sorted(r.output.trail for r in hook.results) == sorted(
        (f"Foreground:{x}", f"Background:{x}", f"Last:{x}") for x in range(1, 5)
    )
    assert sorted(seen for name, seen in hook.calls if name == "after_sample") == [1, 2, 3, 4]
    assert all(result.ok for result in hook.results)

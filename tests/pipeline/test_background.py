"""Background tails: threads, done flags, failures, per-class limits, back-pressure, exit drain."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from pipeline import Pipeline, SampleResult
from tests.support.pipeline import Ctx, make_step
from tests.support.waiting import wait_for

TIMEOUT = 10.0
REPO = "/work/main"


def append(name: str) -> Callable[[Ctx], Ctx]:
    def fn(ctx: Ctx) -> Ctx:
        return ctx.replace(trail=(*ctx.trail, name))

    return fn


def blocked_until(event: threading.Event, then: Callable[[Ctx], Ctx]) -> Callable[[Ctx], Ctx]:
    """A step body that waits for ``event`` (failing loudly instead of hanging) before ``then``."""

    def fn(ctx: Ctx) -> Ctx:
        if not event.wait(TIMEOUT):
            raise AssertionError("the test never released the blocked step")
        return then(ctx)

    return fn


class ConcurrencyProbe:
    """Counts how many calls are inside a step at once, under a lock."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.inside = 0
        self.max_inside = 0
        self.calls = 0

    def wrap(self, body: Callable[[Ctx], Ctx], pause: float = 0.002) -> Callable[[Ctx], Ctx]:
        def fn(ctx: Ctx) -> Ctx:
            with self.lock:
                self.inside += 1
                self.calls += 1
                self.max_inside = max(self.max_inside, self.inside)
            try:
                time.sleep(pause)  # give an overlapping call time to show up
                return body(ctx)
            finally:
                with self.lock:
                    self.inside -= 1

        return fn


# -- threads and done flags ------------------------------------------------------------------


def test_foreground_runs_in_calling_thread_and_tail_in_background() -> None:
    threads: dict[str, set[int]] = {"Fg1": set(), "Fg2": set(), "Boundary": set(), "After": set()}
    release = threading.Event()

    def recording(name: str, body: Callable[[Ctx], Ctx]) -> Callable[[Ctx], Ctx]:
        def fn(ctx: Ctx) -> Ctx:
            threads[name].add(threading.get_ident())
            return body(ctx)

        return fn

    pipeline = Pipeline(
        [
            make_step("Fg1", fn=recording("Fg1", append("Fg1"))),
            make_step("Fg2", fn=recording("Fg2", append("Fg2"))),
            make_step(
                "Boundary",
                fn=recording("Boundary", blocked_until(release, append("Boundary"))),
                async_boundary=True,
            ),
            make_step("After", fn=recording("After", append("After"))),
        ]
    )

    results = pipeline.run([Ctx(sample=i, x=i) for i in range(3)])

    me = threading.get_ident()
    assert threads["Fg1"] == {me}
    assert threads["Fg2"] == {me}
    assert [r.done for r in results] == [False, False, False]
    assert [r.output.trail for r in results] == [("Fg1", "Fg2")] * 3  # as the foreground left it
    assert all(r.error is None for r in results)

    release.set()
    pipeline.wait_for_background(timeout=TIMEOUT)

    assert [r.done for r in results] == [True, True, True]
    assert all(r.ok for r in results), [r.error for r in results]
    assert [r.output.trail for r in results] == [("Fg1", "Fg2", "Boundary", "After")] * 3
    assert [r.output.x for r in results] == [0, 1, 2]
    assert threads["Boundary"]
    assert me not in threads["Boundary"]
    assert threads["After"]
    assert me not in threads["After"]


def test_foreground_failure_never_starts_the_tail() -> None:
    tail_calls: list[int] = []
    lock = threading.Lock()
    raised: list[Exception] = []

    def fg(ctx: Ctx) -> Ctx:
        if ctx.x == 1:
            raised.append(KeyError("foreground"))
            raise raised[-1]
        return ctx

    def tail(ctx: Ctx) -> Ctx:
        with lock:
            tail_calls.append(ctx.x)
        return ctx.replace(y=ctx.x)

    pipeline = Pipeline(
        [make_step("Fg", fn=fg), make_step("Tail", provides={"y"}, fn=tail, async_boundary=True)]
    )

    results = pipeline.run([Ctx(x=i) for i in range(3)])

    failed = results[1]
    assert failed.done  # done at once: it never went to the background
    assert failed.error is raised[0]
    assert failed.failed_at == "Fg"
    assert failed.output is None

    pipeline.wait_for_background(timeout=TIMEOUT)

    assert sorted(tail_calls) == [0, 2]
    assert [r.ok for r in results] == [True, False, True]
    assert [r.output.y for r in results if r.ok] == [0, 2]
    stats = pipeline.background_stats()
    assert (stats["active"], stats["completed"], stats["failed"]) == (0, 2, 0)


def test_background_failure_lands_in_the_same_sample_result() -> None:
    release = threading.Event()
    raised: dict[int, Exception] = {}

    def tail_boom(ctx: Ctx) -> Ctx:
        if ctx.x % 2:
            raised[ctx.x] = ValueError(f"tail failed on {ctx.x}")
            raise raised[ctx.x]
        return ctx.replace(y=ctx.x)

    pipeline = Pipeline(
        [
            make_step("Fg", fn=append("Fg")),
            make_step("Gate", fn=blocked_until(release, append("Gate")), async_boundary=True),
            make_step("TailBoom", provides={"y"}, fn=tail_boom),
        ]
    )

    results = pipeline.run([Ctx(x=i) for i in range(4)])
    originals = list(results)
    assert all(r.error is None for r in results)
    assert all(not r.done for r in results)

    release.set()
    pipeline.wait_for_background(timeout=TIMEOUT)

    assert all(a is b for a, b in zip(results, originals, strict=True))
    for i, result in enumerate(results):
        assert result.done
        if i % 2:
            assert result.error is raised[i]
            assert result.failed_at == "TailBoom"
            assert result.output is None
            assert result.cause is None
            assert not result.ok
        else:
            assert result.ok
            assert result.output.y == i
            assert result.output.trail == ("Fg", "Gate")
    stats = pipeline.background_stats()
    assert (stats["active"], stats["completed"], stats["failed"]) == (0, 2, 2)


def test_multi_step_tail_runs_every_step_in_order() -> None:
    pipeline = Pipeline(
        [
            make_step("A", fn=append("A")),
            make_step("B", fn=append("B"), async_boundary=True),
            make_step("C", fn=append("C"), max_workers=2),
            make_step("D", fn=append("D"), max_workers=3),
        ]
    )

    results = pipeline.run([Ctx(x=i) for i in range(20)], workers=2)
    pipeline.wait_for_background(timeout=TIMEOUT)

    assert all(r.ok for r in results), [r.error for r in results]
    assert all(r.done for r in results), [r.error for r in results]
    assert [r.output.x for r in results] == list(range(20))
    assert {r.output.trail for r in results} == {("A", "B", "C", "D")}


# -- per-class limits -------------------------------------------------------------------------


def test_background_step_with_max_workers_one_never_overlaps() -> None:
    probe = ConcurrencyProbe()
    pipeline = Pipeline(
        [
            make_step("Fg", fn=append("Fg")),
            make_step("Serial", fn=probe.wrap(append("Serial")), async_boundary=True, max_workers=1),
        ]
    )

    results = pipeline.run([Ctx(x=i) for i in range(40)], workers=4)
    pipeline.wait_for_background(timeout=TIMEOUT)

    assert all(r.ok for r in results), [r.error for r in results]
    assert all(r.done for r in results), [r.error for r in results]
    assert probe.calls == 40
    assert probe.max_inside == 1


def test_background_step_with_max_workers_three_runs_three_at_once() -> None:
    barrier = threading.Barrier(3, timeout=TIMEOUT)
    threads: set[int] = set()

    def meet(ctx: Ctx) -> Ctx:
        threads.add(threading.get_ident())
        barrier.wait()  # passes only when three calls of the step are inside at once
        return ctx.replace(y=ctx.x)

    pipeline = Pipeline([make_step("Wide", provides={"y"}, fn=meet, async_boundary=True, max_workers=3)])

    results = pipeline.run([Ctx(x=i) for i in range(6)])
    pipeline.wait_for_background(timeout=2 * TIMEOUT)

    assert all(r.ok for r in results), [r.error for r in results]
    assert [r.output.y for r in results] == list(range(6))
    assert len(threads) == 3


def test_foreground_concurrency_is_workers_whatever_max_workers_says() -> None:
    workers = 4
    gate = threading.Barrier(workers, timeout=TIMEOUT)

    def meet(ctx: Ctx) -> Ctx:
        gate.wait()  # only passes when all four foreground workers are inside at once
        return ctx

    # max_workers = 1 (the default) sizes a background pool; it does not cap the foreground.
    pipeline = Pipeline([make_step("Gate", fn=meet, max_workers=1)])

    results = pipeline.run([Ctx(x=i) for i in range(2 * workers)], workers=workers)

    assert all(r.ok for r in results), [r.error for r in results]


def test_an_exclusive_step_never_overlaps_in_the_foreground() -> None:
    workers = 4
    gate = threading.Barrier(workers, timeout=TIMEOUT)
    probe = ConcurrencyProbe()

    def meet(ctx: Ctx) -> Ctx:
        gate.wait()  # the four foreground workers really are running at once here...
        return ctx

    pipeline = Pipeline(
        [
            make_step("Gate", fn=meet),
            # ...and still only one of them at a time gets into the exclusive writer.
            make_step("Writer", fn=probe.wrap(append("Writer"), pause=0.005), exclusive=True),
        ]
    )

    results = pipeline.run([Ctx(x=i) for i in range(4 * workers)], workers=workers)

    assert all(r.ok for r in results), [r.error for r in results]
    assert probe.calls == 4 * workers
    assert probe.max_inside == 1


# -- waiting and stats ------------------------------------------------------------------------


def test_wait_for_background_times_out_while_a_tail_is_blocked() -> None:
    release = threading.Event()
    pipeline = Pipeline(
        [make_step("Blocked", fn=blocked_until(release, append("Blocked")), async_boundary=True)]
    )

    results = pipeline.run([Ctx(x=0), Ctx(x=1)])

    with pytest.raises(TimeoutError, match="still running"):
        pipeline.wait_for_background(timeout=0.05)
    assert [r.done for r in results] == [False, False]

    release.set()
    pipeline.wait_for_background(timeout=TIMEOUT)
    assert [r.done for r in results] == [True, True]
    assert all(r.output.trail == ("Blocked",) for r in results)


def test_background_stats_counts_before_and_after_draining() -> None:
    release = threading.Event()

    def tail(ctx: Ctx) -> Ctx:
        if ctx.x in (1, 3):
            raise RuntimeError("tail failure")
        return ctx

    pipeline = Pipeline(
        [
            make_step("Gate", fn=blocked_until(release, append("Gate")), async_boundary=True),
            make_step("Tail", fn=tail),
        ]
    )
    assert {"active", "completed", "failed"} <= pipeline.background_stats().keys()
    empty = pipeline.background_stats()
    assert (empty["active"], empty["completed"], empty["failed"]) == (0, 0, 0)

    pipeline.run([Ctx(x=i) for i in range(5)])
    before = pipeline.background_stats()
    assert (before["active"], before["completed"], before["failed"]) == (5, 0, 0)

    release.set()
    pipeline.wait_for_background(timeout=TIMEOUT)
    after = pipeline.background_stats()
    assert (after["active"], after["completed"], after["failed"]) == (0, 3, 2)

    pipeline.run([Ctx(x=0)])  # counts accumulate over runs of the same pipeline
    pipeline.wait_for_background(timeout=TIMEOUT)
    again = pipeline.background_stats()
    assert (again["active"], again["completed"], again["failed"]) == (0, 4, 2)


# -- back-pressure ---------------------------------------------------------------------------


def test_back_pressure_blocks_run_when_max_background_is_reached() -> None:
    release = threading.Event()
    lock = threading.Lock()
    state = {"pulled": 0, "entered": 0, "max_active": 0}
    pipeline: Pipeline[Ctx]

    def tail(ctx: Ctx) -> Ctx:
        with lock:
            state["entered"] += 1
            state["max_active"] = max(state["max_active"], pipeline.background_stats()["active"])
        if not release.wait(TIMEOUT):
            raise AssertionError("never released")
        return ctx.replace(y=ctx.x)

    pipeline = Pipeline(
        [make_step("Fg", fn=append("Fg")), make_step("Tail", fn=tail, async_boundary=True, max_workers=4)],
        max_background=2,
    )

    def source() -> Iterator[Ctx]:
        for i in range(8):
            state["pulled"] += 1
            yield Ctx(x=i)

    out: list[SampleResult[Ctx]] = []
    runner = threading.Thread(target=lambda: out.extend(pipeline.run(source())))
    runner.start()
    try:
        wait_for(lambda: state["entered"] == 2, TIMEOUT, "two samples in the background", every=0.005)
        wait_for(lambda: state["pulled"] >= 3, TIMEOUT, "the third sample to be taken", every=0.005)
        runner.join(0.2)
        assert runner.is_alive(), "run() did not wait for a background slot"
        assert state["pulled"] == 3
        assert state["entered"] == 2  # the pool has room for 4, the backlog only 2
        assert pipeline.background_stats()["active"] == 2
    finally:
        release.set()
        runner.join(TIMEOUT)

    assert not runner.is_alive()
    pipeline.wait_for_background(timeout=TIMEOUT)
    assert len(out) == 8
    assert all(r.ok for r in out), [r.error for r in out]
    assert all(r.done for r in out), [r.error for r in out]
    assert [r.output.y for r in out] == list(range(8))
    assert state["entered"] == 8
    assert 1 <= state["max_active"] <= 2


def test_run_async_back_pressure_waits_without_blocking_the_loop() -> None:
    release = threading.Event()
    pipeline = Pipeline(
        [make_step("Tail", fn=blocked_until(release, append("Tail")), async_boundary=True, max_workers=2)],
        max_background=1,
    )

    async def main() -> list[SampleResult[Ctx]]:
        task = asyncio.ensure_future(pipeline.run_async([Ctx(x=i) for i in range(3)]))
        # This coroutine keeps running while run_async waits for a backlog slot.
        # Polled from a thread: the event loop must stay free for run_async to get there.
        await asyncio.to_thread(
            wait_for,
            lambda: pipeline.background_stats()["active"] >= 1,
            TIMEOUT,
            "a sample to reach the background",
            every=0.005,
        )
        for _ in range(20):
            await asyncio.sleep(0.005)
            assert pipeline.background_stats()["active"] == 1
            assert not task.done()
        release.set()
        return await asyncio.wait_for(task, TIMEOUT)

    results = asyncio.run(main())
    pipeline.wait_for_background(timeout=TIMEOUT)

    assert all(r.ok for r in results), [r.error for r in results]
    assert all(r.done for r in results), [r.error for r in results]
    assert [r.output.trail for r in results] == [("Tail",)] * 3


def test_run_async_with_a_boundary_returns_pending_results() -> None:
    release = threading.Event()
    pipeline = Pipeline(
        [
            make_step("Fg", fn=append("Fg")),
            make_step("Tail", fn=blocked_until(release, append("Tail")), async_boundary=True),
            make_step("Last", fn=append("Last")),
        ]
    )

    results = asyncio.run(pipeline.run_async([Ctx(x=i) for i in range(3)], workers=2))

    assert [r.done for r in results] == [False] * 3
    assert [r.output.trail for r in results] == [("Fg",)] * 3

    release.set()
    pipeline.wait_for_background(timeout=TIMEOUT)

    assert all(r.ok for r in results), [r.error for r in results]
    assert all(r.done for r in results), [r.error for r in results]
    assert [r.output.trail for r in results] == [("Fg", "Tail", "Last")] * 3
    assert [r.output.x for r in results] == [0, 1, 2]


# -- interpreter exit -------------------------------------------------------------------------


def run_script(tmp_path: Path, source: str, *args: str) -> subprocess.CompletedProcess[str]:
    script = tmp_path / "script.py"
    script.write_text(textwrap.dedent(source))
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (REPO, env.get("PYTHONPATH")) if p)
    return subprocess.run(
        [sys.executable, str(script), *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.slow
def test_pending_background_work_is_drained_at_interpreter_exit(tmp_path: Path) -> None:
    out_file = tmp_path / "done.txt"
    proc = run_script(
        tmp_path,
        """
        import sys, time
        from pipeline import Pipeline, StepContext

        out_path = sys.argv[1]

        class Slow:
            requires = frozenset()
            provides = frozenset()
            async_boundary = True

            def __call__(self, ctx):
                time.sleep(0.05)
                return ctx

        class Record:
            requires = frozenset()
            provides = frozenset()

            def __call__(self, ctx):
                with open(out_path, "a") as f:
                    f.write(f"sample {ctx.sample}\\n")
                return ctx

        pipeline = Pipeline([Slow(), Record()])
        results = pipeline.run([StepContext(sample=i) for i in range(8)])
        print("pending", sum(not r.done for r in results))
        """,
        str(out_file),
    )

    assert proc.returncode == 0, proc.stderr
    assert "pending" in proc.stdout
    assert "pending 0" not in proc.stdout  # exit came with work pending
    lines = sorted(out_file.read_text().splitlines())
    assert lines == sorted(f"sample {i}" for i in range(8))
    assert "waiting for" in proc.stderr


@pytest.mark.slow
def test_exit_timeout_abandons_stuck_background_work(tmp_path: Path) -> None:
    proc = run_script(
        tmp_path,
        """
        import threading
        from pipeline import Pipeline, StepContext

        never = threading.Event()

        class Stuck:
            requires = frozenset()
            provides = frozenset()
            async_boundary = True

            def __call__(self, ctx):
                never.wait()
                return ctx

        pipeline = Pipeline([Stuck()], exit_timeout=0.2)
        pipeline.run([StepContext(sample=i) for i in range(3)])
        print("exiting")
        """,
    )

    assert "exiting" in proc.stdout
    assert "abandoned" in proc.stderr
    assert "abandoned 3 " in proc.stderr

"""Pipeline.run / stream / run_async: ordering, failures, concurrency, laziness, async steps."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any

import pytest

from pipeline import Pipeline, PipelineError, SampleResult
from tests.support.pipeline import Ctx, make_step

TIMEOUT = 10.0


def make_async_step(name: str, fn: Callable[[Any], Awaitable[Any]] | None = None, **class_attrs: Any) -> Any:
    """Like ``make_step`` but the fresh class has an ``async def __call__``."""

    async def default(ctx: Any) -> Any:
        await asyncio.sleep(0)
        return ctx.replace(trail=(*ctx.trail, name))

    body = fn or default

    async def __call__(self: Any, ctx: Any) -> Any:
        return await body(ctx)

    attrs: dict[str, Any] = {"requires": frozenset(), "provides": frozenset(), "__call__": __call__}
    attrs.update(class_attrs)
    return type(name, (), attrs)()


def add_one(ctx: Ctx) -> Ctx:
    return ctx.replace(y=ctx.x + 1)


def double(ctx: Ctx) -> Ctx:
    return ctx.replace(z=ctx.y * 2)


def two_step_pipeline() -> Pipeline[Ctx]:
    return Pipeline(
        [
            make_step("AddOne", {"x"}, {"y"}, add_one),
            make_step("Double", {"y"}, {"z"}, double),
        ]
    )


class CountingSource:
    """A generator of contexts that records how many items have been pulled from it."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.pulled = 0

    def __iter__(self) -> Iterator[Ctx]:
        for i in range(self.n):
            self.pulled += 1
            yield Ctx(x=i)


def boom_on(bad: int, exc_type: type[Exception] = ValueError) -> Callable[[Ctx], Ctx]:
    def fn(ctx: Ctx) -> Ctx:
        if ctx.x == bad:
            raise exc_type(f"bad sample {ctx.x}")
        return ctx.replace(trail=(*ctx.trail, "ok"))

    return fn


# -- basic run ------------------------------------------------------------------------


def test_run_returns_one_result_per_input_in_order_with_final_context() -> None:
    pipeline = two_step_pipeline()
    inputs = [Ctx(sample=f"s{i}", x=i) for i in range(10)]

    results = pipeline.run(inputs, workers=1)

    assert len(results) == len(inputs)
    for i, result in enumerate(results):
        assert isinstance(result, SampleResult)
        assert result.ok
        assert result.done
        assert result.error is None
        assert result.failed_at is None
        assert result.sample == f"s{i}"
        assert result.output == Ctx(sample=f"s{i}", x=i, y=i + 1, z=2 * (i + 1))


def test_run_empty_input_returns_empty_list() -> None:
    assert two_step_pipeline().run([]) == []
    assert two_step_pipeline().run([], workers=3) == []


def test_run_accepts_a_generator() -> None:
    pipeline = two_step_pipeline()
    results = pipeline.run(Ctx(x=i) for i in range(5))
    assert [r.output.z for r in results] == [2, 4, 6, 8, 10]


@pytest.mark.parametrize("workers", [1, 3])
def test_failing_step_fails_only_that_sample(workers: int) -> None:
    raised: list[Exception] = []
    after_calls: list[int] = []

    def fail_on_two(ctx: Ctx) -> Ctx:
        if ctx.x == 2:
            exc = ValueError("sample two is bad")
            raised.append(exc)
            raise exc
        return ctx.replace(y=ctx.x)

    def after(ctx: Ctx) -> Ctx:
        after_calls.append(ctx.x)
        return ctx.replace(z=ctx.y)

    pipeline = Pipeline(
        [make_step("Flaky", {"x"}, {"y"}, fail_on_two), make_step("After", {"y"}, {"z"}, after)]
    )
    results = pipeline.run([Ctx(sample=i, x=i) for i in range(5)], workers=workers)

    assert len(results) == 5
    bad = results[2]
    assert bad.output is None
    assert bad.error is raised[0]
    assert bad.failed_at == "Flaky"
    assert not bad.ok
    assert bad.done
    assert bad.sample == 2
    for i in (0, 1, 3, 4):
        assert results[i].ok
        assert results[i].output == Ctx(sample=i, x=i, y=i, z=i)
    assert sorted(after_calls) == [0, 1, 3, 4]


@pytest.mark.parametrize(
    "bad_return",
    [None, {"x": 1}, 42],
    ids=["none", "dict", "int"],
)
def test_step_returning_non_context_fails_sample_with_type_error(bad_return: object) -> None:
    def fn(ctx: Ctx) -> Any:
        return bad_return if ctx.x == 1 else ctx

    pipeline = Pipeline([make_step("Sloppy", fn=fn), make_step("Next")])
    results = pipeline.run([Ctx(x=0), Ctx(x=1), Ctx(x=2)])

    assert [r.ok for r in results] == [True, False, True]
    bad = results[1]
    assert isinstance(bad.error, TypeError)
    assert "Sloppy" in str(bad.error)
    assert bad.failed_at == "Sloppy"
    assert bad.output is None
    assert results[0].output.trail == ("Next",)


def test_async_step_returning_none_fails_with_type_error() -> None:
    async def returns_none(ctx: Ctx) -> None:
        return None

    pipeline = Pipeline([make_async_step("AsyncSloppy", returns_none)])

    (sync_result,) = pipeline.run([Ctx()])
    (async_result,) = asyncio.run(pipeline.run_async([Ctx()]))

    for result in (sync_result, async_result):
        assert isinstance(result.error, TypeError)
        assert "AsyncSloppy" in str(result.error)
        assert result.failed_at == "AsyncSloppy"


@pytest.mark.parametrize("workers", [1, 3])
def test_non_context_input_yields_failed_result_not_exception(workers: int) -> None:
    pipeline = two_step_pipeline()
    inputs: list[Any] = [Ctx(x=0), {"x": 1}, Ctx(x=2), None, Ctx(x=4)]

    results = pipeline.run(inputs, workers=workers)

    assert len(results) == 5
    assert [r.ok for r in results] == [True, False, True, False, True]
    for index in (1, 3):
        result = results[index]
        assert isinstance(result.error, TypeError)
        assert f"input #{index}" in str(result.error)
        assert result.output is None
        assert result.sample is inputs[index]
    assert [r.output.z for r in results if r.ok] == [2, 6, 10]


def test_run_async_non_context_input_yields_failed_result() -> None:
    results = asyncio.run(two_step_pipeline().run_async([Ctx(x=0), "nope", Ctx(x=2)]))

    assert [r.ok for r in results] == [True, False, True]
    assert isinstance(results[1].error, TypeError)
    assert "input #1" in str(results[1].error)


@pytest.mark.parametrize("workers", [1, 3])
@pytest.mark.parametrize(
    "exc_type", [ValueError, KeyError, RuntimeError, ZeroDivisionError, PipelineError, TypeError]
)
def test_failures_never_raise_out_of_run(workers: int, exc_type: type[Exception]) -> None:
    pipeline = Pipeline([make_step("Explodes", fn=boom_on(1, exc_type)), make_step("Tail")])

    results = pipeline.run([Ctx(x=i) for i in range(4)], workers=workers)

    assert [r.ok for r in results] == [True, False, True, True]
    assert type(results[1].error) is exc_type
    assert results[1].failed_at == "Explodes"


def test_failures_never_raise_out_of_run_async() -> None:
    pipeline = Pipeline([make_step("Explodes", fn=boom_on(0)), make_async_step("AsyncTail")])

    results = asyncio.run(pipeline.run_async([Ctx(x=i) for i in range(3)], workers=2))

    assert [r.ok for r in results] == [False, True, True]
    assert isinstance(results[0].error, ValueError)
    assert results[1].output.trail == ("ok", "AsyncTail")


# -- foreground workers -----------------------------------------------------------------


def test_workers_keep_input_order_when_later_samples_finish_first() -> None:
    finished: list[int] = []
    last_finished = threading.Event()
    lock = threading.Lock()

    def fn(ctx: Ctx) -> Ctx:
        # Sample 0 only finishes after sample 3 has: completion order differs from input order.
        if ctx.x == 0 and not last_finished.wait(TIMEOUT):
            raise AssertionError("sample 3 never finished while sample 0 was running")
        with lock:
            finished.append(ctx.x)
        if ctx.x == 3:
            last_finished.set()
        return ctx.replace(y=ctx.x)

    pipeline = Pipeline([make_step("Reorder", fn=fn, max_workers=4)])
    results = pipeline.run([Ctx(x=i) for i in range(4)], workers=4)

    assert finished.index(3) < finished.index(0)
    assert all(r.ok for r in results), [r.error for r in results]
    assert [r.output.y for r in results] == [0, 1, 2, 3]


@pytest.mark.parametrize("workers", [2, 4])
def test_workers_run_samples_concurrently(workers: int) -> None:
    barrier = threading.Barrier(workers)
    threads: set[int] = set()

    def fn(ctx: Ctx) -> Ctx:
        threads.add(threading.get_ident())
        barrier.wait(timeout=TIMEOUT)  # only passes when `workers` samples are inside at once
        return ctx.replace(y=ctx.x)

    pipeline = Pipeline([make_step("Meet", fn=fn, max_workers=workers)])
    results = pipeline.run([Ctx(x=i) for i in range(2 * workers)], workers=workers)

    assert all(r.ok for r in results), [r.error for r in results]
    assert [r.output.y for r in results] == list(range(2 * workers))
    assert len(threads) == workers
    assert threading.get_ident() not in threads


@pytest.mark.parametrize("workers", [0, -1, True, 1.5, "2"])
def test_invalid_workers_is_rejected(workers: Any) -> None:
    with pytest.raises(ValueError, match="workers"):
        two_step_pipeline().run([Ctx()], workers=workers)


# -- streaming ------------------------------------------------------------------------------


def test_stream_with_one_worker_consumes_input_lazily() -> None:
    source = CountingSource(50)
    stream = two_step_pipeline().stream(iter(source), workers=1)

    assert source.pulled == 0  # nothing happens before the first result is asked for
    first = next(stream)
    assert first.output.z == 2
    assert source.pulled == 1
    second = next(stream)
    assert second.output.z == 4
    assert source.pulled == 2

    rest = list(stream)
    assert len(rest) == 48
    assert source.pulled == 50


def test_stream_with_workers_reads_at_most_max_in_flight_ahead() -> None:
    max_in_flight = 4
    source = CountingSource(30)
    stream = two_step_pipeline().stream(iter(source), workers=2, max_in_flight=max_in_flight)

    in_flight_seen: list[int] = []
    outputs: list[int] = []
    for received, result in enumerate(stream, start=1):
        outputs.append(result.output.z)
        # Items taken from the input and not yet handed back, counting the one just yielded.
        in_flight_seen.append(source.pulled - (received - 1))

    assert outputs == [2 * (i + 1) for i in range(30)]
    assert max(in_flight_seen) <= max_in_flight
    assert in_flight_seen[0] == max_in_flight  # it does read ahead, up to the window
    assert source.pulled == 30


def test_stream_default_window_is_bounded() -> None:
    source = CountingSource(100)
    stream = two_step_pipeline().stream(iter(source), workers=2)

    first = next(stream)
    assert first.output.z == 2
    assert 2 <= source.pulled <= 8  # default max_in_flight is 4 x workers
    stream.close()
    assert source.pulled < 100


def test_stream_handles_a_large_generator_without_a_list() -> None:
    n = 200_000
    source = CountingSource(n)
    pipeline = Pipeline([make_step("Identity", fn=lambda ctx: ctx)])

    count = 0
    total = 0
    for result in pipeline.stream(iter(source)):
        count += 1
        total += result.output.x
        assert source.pulled == count

    assert count == n
    assert total == n * (n - 1) // 2


# -- async -----------------------------------------------------------------------------------


def test_run_async_returns_the_same_results_as_run() -> None:
    inputs = [Ctx(sample=i, x=i) for i in range(6)]
    pipeline = Pipeline(
        [
            make_step("AddOne", {"x"}, {"y"}, add_one),
            make_step("MaybeFail", {"y"}, set(), boom_on(3)),
            make_step("Double", {"y"}, {"z"}, double),
        ]
    )

    sync_results = pipeline.run(inputs)
    async_results = asyncio.run(pipeline.run_async(inputs))

    assert [r.output for r in async_results] == [r.output for r in sync_results]
    assert [r.failed_at for r in async_results] == [r.failed_at for r in sync_results]
    assert [type(r.error) for r in async_results] == [type(r.error) for r in sync_results]
    assert async_results[3].failed_at == "MaybeFail"
    assert async_results[0].output == Ctx(sample=0, x=0, y=1, z=2, trail=("ok",))


def test_run_async_with_async_and_sync_steps() -> None:
    loop_threads: set[int] = set()

    async def async_add(ctx: Ctx) -> Ctx:
        loop_threads.add(threading.get_ident())
        await asyncio.sleep(0)
        return ctx.replace(y=ctx.x + 1, trail=(*ctx.trail, "async"))

    pipeline = Pipeline(
        [
            make_async_step("AsyncAdd", async_add, provides={"y"}),
            make_step("SyncDouble", {"y"}, {"z"}, double),
        ]
    )

    async def main() -> tuple[int, list[SampleResult[Ctx]]]:
        return threading.get_ident(), await pipeline.run_async([Ctx(x=i) for i in range(4)])

    loop_thread, results = asyncio.run(main())

    assert all(r.ok for r in results), [r.error for r in results]
    assert [r.output.z for r in results] == [2, 4, 6, 8]
    assert [r.output.trail for r in results] == [("async",)] * 4
    assert loop_threads == {loop_thread}  # async steps are awaited on the caller's loop


def test_run_async_accepts_an_async_generator() -> None:
    pulled: list[int] = []

    async def source() -> AsyncIterator[Ctx]:
        for i in range(5):
            await asyncio.sleep(0)
            pulled.append(i)
            yield Ctx(x=i)

    pipeline = Pipeline([make_step("AddOne", {"x"}, {"y"}, add_one), make_async_step("Mark")])
    results = asyncio.run(pipeline.run_async(source()))

    assert pulled == [0, 1, 2, 3, 4]
    assert [r.output.y for r in results] == [1, 2, 3, 4, 5]
    assert [r.output.trail for r in results] == [("Mark",)] * 5


@pytest.mark.parametrize("workers", [2, 3])
def test_run_async_workers_run_samples_concurrently_on_the_loop(workers: int) -> None:
    async def main() -> list[SampleResult[Ctx]]:
        everyone_in = asyncio.Event()
        inside = 0
        max_inside = 0

        async def meet(ctx: Ctx) -> Ctx:
            nonlocal inside, max_inside
            inside += 1
            max_inside = max(max_inside, inside)
            if inside >= workers:
                everyone_in.set()
            try:
                await asyncio.wait_for(everyone_in.wait(), TIMEOUT)
            finally:
                inside -= 1
            return ctx.replace(y=ctx.x)

        pipeline = Pipeline([make_async_step("AsyncMeet", meet, max_workers=workers)])
        results = await pipeline.run_async([Ctx(x=i) for i in range(2 * workers)], workers=workers)
        assert max_inside == workers  # never more than `workers` samples at once
        return results

    results = asyncio.run(main())

    assert all(r.ok for r in results), [r.error for r in results]
    assert [r.output.y for r in results] == list(range(2 * workers))


def test_run_async_with_one_worker_runs_samples_one_at_a_time() -> None:
    async def main() -> list[SampleResult[Ctx]]:
        inside = 0
        max_inside = 0

        async def step(ctx: Ctx) -> Ctx:
            nonlocal inside, max_inside
            inside += 1
            max_inside = max(max_inside, inside)
            for _ in range(3):
                await asyncio.sleep(0)
            inside -= 1
            return ctx.replace(y=ctx.x)

        pipeline = Pipeline([make_async_step("OneAtATime", step, max_workers=4)])
        results = await pipeline.run_async([Ctx(x=i) for i in range(6)], workers=1)
        assert max_inside == 1
        return results

    results = asyncio.run(main())
    assert [r.output.y for r in results] == list(range(6))


def test_async_step_inside_sync_run() -> None:
    async def async_add(ctx: Ctx) -> Ctx:
        await asyncio.sleep(0)
        return ctx.replace(y=ctx.x + 1)

    pipeline = Pipeline(
        [make_async_step("AsyncAdd", async_add, provides={"y"}), make_step("Double", {"y"}, {"z"}, double)]
    )

    for workers in (1, 2):
        results = pipeline.run([Ctx(x=i) for i in range(4)], workers=workers)
        assert all(r.ok for r in results), [r.error for r in results]
        assert [r.output.z for r in results] == [2, 4, 6, 8]


def _async_add_pipeline() -> Pipeline[Ctx]:
    async def async_add(ctx: Ctx) -> Ctx:
        await asyncio.sleep(0)
        return ctx.replace(y=ctx.x + 1)

    return Pipeline([make_async_step("AsyncAdd", async_add, provides={"y"})])


@pytest.mark.parametrize("how", ["run_in_executor", "to_thread"])
def test_run_from_an_executor_thread_of_a_running_loop(how: str) -> None:
    pipeline = _async_add_pipeline()
    inputs = [Ctx(x=i) for i in range(3)]

    async def main() -> list[SampleResult[Ctx]]:
        if how == "run_in_executor":
            return await asyncio.get_running_loop().run_in_executor(None, pipeline.run, inputs)
        return await asyncio.to_thread(pipeline.run, inputs)

    results = asyncio.run(main())

    assert all(r.ok for r in results), [r.error for r in results]
    assert [r.output.y for r in results] == [1, 2, 3]


def test_run_called_directly_inside_a_coroutine_with_an_async_step() -> None:
    pipeline = _async_add_pipeline()

    async def main() -> list[SampleResult[Ctx]]:
        return pipeline.run([Ctx(x=i) for i in range(3)])

    results = asyncio.run(main())

    assert all(r.ok for r in results), [r.error for r in results]
    assert [r.output.y for r in results] == [1, 2, 3]


# -- nesting ----------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["run", "run_async"])
def test_nested_pipeline_failure_is_reported_as_pipeline(mode: str) -> None:
    raised: list[Exception] = []
    after_calls: list[int] = []

    def inner_boom(ctx: Ctx) -> Ctx:
        if ctx.x == 1:
            exc = RuntimeError("inner failure")
            raised.append(exc)
            raise exc
        return ctx.replace(trail=(*ctx.trail, "InnerBoom"))

    def after(ctx: Ctx) -> Ctx:
        after_calls.append(ctx.x)
        return ctx.replace(trail=(*ctx.trail, "After"))

    inner = Pipeline([make_step("InnerOk"), make_step("InnerBoom", fn=inner_boom)])
    outer = Pipeline([make_step("Before"), inner, make_step("After", fn=after)])
    inputs = [Ctx(x=i) for i in range(3)]

    results = outer.run(inputs) if mode == "run" else asyncio.run(outer.run_async(inputs))

    bad = results[1]
    assert bad.failed_at == "Pipeline"
    assert bad.error is raised[0]
    assert bad.output is None
    assert any("InnerBoom" in note for note in bad.error.__notes__)
    assert results[0].output.trail == ("Before", "InnerOk", "InnerBoom", "After")
    assert results[2].ok
    assert sorted(after_calls) == [0, 2]

"""Hooks observe every step without steering it; a CancellationToken stops the remaining steps."""

from __future__ import annotations

import asyncio
import logging
import threading
from typing import Any

import pytest

from pipeline import CancellationToken, Pipeline, PipelineCancelled, PipelineHook
from tests.support.pipeline import Ctx, make_step

TIMEOUT = 10.0


class Recorder(PipelineHook):
    """Records every hook call as (method, step name, ctx[, error])."""

    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []
        self._lock = threading.Lock()

    def _add(self, *call: Any) -> None:
        with self._lock:
            self.calls.append(call)

    def before_step(self, name: str, ctx: Any) -> None:
        self._add("before", name, ctx)

    def after_step(self, name: str, ctx: Any) -> None:
        self._add("after", name, ctx)

    def on_error(self, name: str, ctx: Any, error: BaseException) -> None:
        self._add("error", name, ctx, error)


def adder(name: str, amount: int, returned: list[Ctx]) -> Any:
    """A step adding ``amount`` to x and remembering the context it returned."""

    def body(ctx: Ctx) -> Ctx:
        out = ctx.replace(x=ctx.x + amount, trail=(*ctx.trail, name))
        returned.append(out)
        return out

    return make_step(name, {"x", "trail"}, {"x", "trail"}, body)


# -- hooks ---------------------------------------------------------------------------------------


def test_hooks_see_every_step_in_order_with_the_returned_context() -> None:
    returned: list[Ctx] = []
    hook = Recorder()
    pipe: Pipeline[Ctx] = Pipeline(
        [adder("AddOne", 1, returned), adder("AddTen", 10, returned)],
        hooks=[hook],
    )
    ctx = Ctx(x=1)

    [result] = pipe.run([ctx])

    assert result.ok
    first_out, second_out = returned
    assert [c[:2] for c in hook.calls] == [
        ("before", "AddOne"),
        ("after", "AddOne"),
        ("before", "AddTen"),
        ("after", "AddTen"),
    ]
    assert hook.calls[0][2] is ctx
    assert hook.calls[1][2] is first_out
    assert hook.calls[2][2] is first_out
    assert hook.calls[3][2] is second_out
    assert result.output is second_out


def test_on_error_gets_the_failing_step_its_input_and_the_error() -> None:
    error = ValueError("bad sample")
    ran: list[str] = []

    def explode(ctx: Ctx) -> Ctx:
        raise error

    hook = Recorder()
    pipe: Pipeline[Ctx] = Pipeline(
        [
            make_step("Prepare", {"x"}, {"x"}, lambda ctx: ctx.replace(x=ctx.x + 1)),
            make_step("Explode", fn=explode),
            make_step("Never", fn=lambda ctx: ran.append("Never") or ctx),
        ],
        hooks=[hook],
    )

    [result] = pipe.run([Ctx(x=1)])

    assert result.error is error
    assert result.failed_at == "Explode"
    assert ran == []
    assert [c[:2] for c in hook.calls] == [
        ("before", "Prepare"),
        ("after", "Prepare"),
        ("before", "Explode"),
        ("error", "Explode"),
    ]
    _, _, ctx_seen, error_seen = hook.calls[-1]
    assert ctx_seen == Ctx(x=2)
    assert error_seen is error


@pytest.mark.parametrize("method", ["before_step", "after_step"])
def test_a_raising_hook_is_logged_and_never_breaks_the_sample(
    method: str, caplog: pytest.LogCaptureFixture
) -> None:
    class Broken(PipelineHook):
        pass

    def fail(*args: Any) -> None:
        raise RuntimeError(f"hook broke in {method}")

    setattr(Broken, method, fail)
    behind = Recorder()  # a hook after the broken one is still called
    pipe: Pipeline[Ctx] = Pipeline(
        [adder("First", 1, []), adder("Second", 2, [])],
        hooks=[Broken(), behind],
    )

    with caplog.at_level(logging.ERROR, logger="pipeline.hooks"):
        results = pipe.run([Ctx(x=0), Ctx(x=10)])

    assert [r.error for r in results] == [None, None]
    assert [(r.output.x, r.output.trail) for r in results] == [
        (3, ("First", "Second")),
        (13, ("First", "Second")),
    ]
    hook_errors = [r for r in caplog.records if r.name == "pipeline.hooks" and r.levelno == logging.ERROR]
    assert len(hook_errors) == 4  # two steps x two samples
    assert all(r.exc_info for r in hook_errors)
    assert all(isinstance(r.exc_info[1], RuntimeError) for r in hook_errors)
    assert len(behind.calls) == 8


def test_hooks_fire_for_background_tail_steps() -> None:
    hook = Recorder()
    pipe: Pipeline[Ctx] = Pipeline(
        [
            make_step("Front"),
            make_step("Boundary", async_boundary=True),
            make_step("Tail"),
        ],
        hooks=[hook],
    )

    [result] = pipe.run([Ctx()])
    pipe.wait_for_background(timeout=TIMEOUT)

    assert result.done
    assert result.ok
    assert result.output.trail == ("Front", "Boundary", "Tail")
    assert [c[:2] for c in hook.calls] == [
        ("before", "Front"),
        ("after", "Front"),
        ("before", "Boundary"),
        ("after", "Boundary"),
        ("before", "Tail"),
        ("after", "Tail"),
    ]
    assert hook.calls[-1][2] is result.output


def test_on_error_fires_for_a_failing_background_step() -> None:
    hook = Recorder()
    error = KeyError("tail")

    def explode(ctx: Ctx) -> Ctx:
        raise error

    pipe: Pipeline[Ctx] = Pipeline(
        [make_step("Front"), make_step("TailBoom", fn=explode, async_boundary=True)],
        hooks=[hook],
    )

    [result] = pipe.run([Ctx()])
    pipe.wait_for_background(timeout=TIMEOUT)

    assert result.error is error
    assert result.failed_at == "TailBoom"
    assert hook.calls[-1][0:2] == ("error", "TailBoom")
    assert hook.calls[-1][3] is error


def test_a_hooks_return_value_cannot_change_the_context() -> None:
    seen: list[Ctx] = []

    class Meddler(PipelineHook):
        def before_step(self, name: str, ctx: Any) -> Any:
            return ctx.replace(x=-1)

        def after_step(self, name: str, ctx: Any) -> Any:
            return ctx.replace(x=-2)

    def record(ctx: Ctx) -> Ctx:
        seen.append(ctx)
        return ctx.replace(x=ctx.x + 1)

    pipe: Pipeline[Ctx] = Pipeline(
        [make_step("Inc1", {"x"}, {"x"}, record), make_step("Inc2", {"x"}, {"x"}, record)],
        hooks=[Meddler()],
    )

    [result] = pipe.run([Ctx(x=5)])

    assert [c.x for c in seen] == [5, 6]
    assert result.output == Ctx(x=7)


# -- cancellation --------------------------------------------------------------------------------


def test_token_state_and_first_reason_is_kept() -> None:
    token = CancellationToken()
    assert not token.cancelled
    assert token.reason is None
    token.raise_if_cancelled("Anything")  # not cancelled: no error

    token.cancel("first")
    token.cancel("second")

    assert token.cancelled
    assert token.reason == "first"
    with pytest.raises(PipelineCancelled) as info:
        token.raise_if_cancelled("Step")
    assert (info.value.step, info.value.reason) == ("Step", "first")


def test_cancel_before_run_cancels_every_sample_without_running_a_step() -> None:
    ran: list[int] = []
    token = CancellationToken()
    token.cancel("shutting down")
    pipe: Pipeline[Ctx] = Pipeline(
        [make_step("Head", fn=lambda ctx: ran.append(ctx.x) or ctx), make_step("Rest")]
    )

    results = pipe.run([Ctx(sample=f"s{i}", x=i) for i in range(3)], cancel_token=token)

    assert ran == []
    assert [r.sample for r in results] == ["s0", "s1", "s2"]
    for result in results:
        assert isinstance(result.error, PipelineCancelled)
        assert result.error.reason == "shutting down"
        assert result.failed_at == "Head"
        assert result.output is None


def test_cancel_inside_a_step_stops_the_rest_of_the_run() -> None:
    ran: list[tuple[str, int]] = []
    token = CancellationToken()

    def log(name: str) -> Any:
        def body(ctx: Ctx) -> Ctx:
            ran.append((name, ctx.x))
            if name == "Middle" and ctx.x == 1:
                token.cancel("found it")
            return ctx

        return make_step(name, fn=body)

    pipe: Pipeline[Ctx] = Pipeline([log("Start"), log("Middle"), log("End")])

    results = pipe.run([Ctx(x=0), Ctx(x=1), Ctx(x=2), Ctx(x=3)], cancel_token=token)

    assert ran == [("Start", 0), ("Middle", 0), ("End", 0), ("Start", 1), ("Middle", 1)]
    assert len(results) == 4
    assert results[0].ok
    assert isinstance(results[1].error, PipelineCancelled)
    assert results[1].failed_at == "End"
    for result in results[2:]:
        assert isinstance(result.error, PipelineCancelled)
        assert result.failed_at == "Start"
    assert token.cancelled
    assert token.reason == "found it"


def test_cancel_stops_background_tail_steps() -> None:
    entered = threading.Event()
    release = threading.Event()
    ran: list[tuple[str, int]] = []

    def blocking(ctx: Ctx) -> Ctx:
        ran.append(("Learn", ctx.x))
        entered.set()
        assert release.wait(TIMEOUT)
        return ctx.replace(y=1)

    def store(ctx: Ctx) -> Ctx:
        ran.append(("Store", ctx.x))
        return ctx

    token = CancellationToken()
    pipe: Pipeline[Ctx] = Pipeline(
        [
            make_step("Front"),
            make_step("Learn", set(), {"y"}, blocking, async_boundary=True, max_workers=1),
            make_step("Store", fn=store),
        ]
    )

    results = pipe.run([Ctx(x=1), Ctx(x=2)], cancel_token=token)
    assert [r.done for r in results] == [False, False]
    assert entered.wait(TIMEOUT)
    token.cancel("stop learning")
    release.set()
    pipe.wait_for_background(timeout=TIMEOUT)

    assert ran == [("Learn", 1)]  # sample 1's Store and sample 2's Learn never ran
    assert all(r.done for r in results)
    assert isinstance(results[0].error, PipelineCancelled)
    assert results[0].failed_at == "Store"
    assert results[0].output is None
    assert isinstance(results[1].error, PipelineCancelled)
    assert results[1].failed_at == "Learn"
    assert pipe.background_stats()["failed"] == 2


def test_cancellation_in_run_async() -> None:
    ran: list[tuple[str, int]] = []
    token = CancellationToken()

    async def check(ctx: Ctx) -> Ctx:
        ran.append(("AsyncCheck", ctx.x))
        await asyncio.sleep(0)
        if ctx.x == 0:
            token.cancel("async stop")
        return ctx

    async def async_check_call(self: Any, ctx: Ctx) -> Ctx:
        return await check(ctx)

    pipe: Pipeline[Ctx] = Pipeline(
        [
            make_step("SyncFirst", fn=lambda ctx: ran.append(("SyncFirst", ctx.x)) or ctx),
            make_step("AsyncCheck", __call__=async_check_call),
            make_step("AfterCheck", fn=lambda ctx: ran.append(("AfterCheck", ctx.x)) or ctx),
        ]
    )

    results = asyncio.run(pipe.run_async([Ctx(x=0), Ctx(x=1), Ctx(x=2)], cancel_token=token))

    assert ran == [("SyncFirst", 0), ("AsyncCheck", 0)]
    assert len(results) == 3
    assert all(isinstance(r.error, PipelineCancelled) for r in results)
    assert [r.failed_at for r in results] == ["AfterCheck", "SyncFirst", "SyncFirst"]
    assert all(r.error.reason == "async stop" for r in results)

"""Branch: parallel children, contracts, failure collection and merge strategies."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from pipeline import Branch, BranchError, MergeStrategy, Pipeline, PipelineConfigError
from tests.support.pipeline import Ctx, make_step

TIMEOUT = 10.0


def setter(name: str, field: str, value: Any, requires: frozenset[str] = frozenset()) -> Any:
    """A step that sets ``field`` to ``value``."""
    return make_step(name, requires, {field}, lambda ctx: ctx.replace(**{field: value}))


def async_step(name: str, body: Any, requires: Any = frozenset(), provides: Any = frozenset()) -> Any:
    """A step whose ``__call__`` is ``async def`` and awaits ``body(ctx)``."""

    async def __call__(self: Any, ctx: Any) -> Any:
        return await body(ctx)

    return make_step(name, requires, provides, __call__=__call__)


# -- parallelism -------------------------------------------------------------------------


def test_sync_children_run_in_parallel_threads() -> None:
    barrier = threading.Barrier(3, timeout=TIMEOUT)
    threads: dict[str, str] = {}

    def meet(field: str, value: int) -> Any:
        def body(ctx: Ctx) -> Ctx:
            barrier.wait()  # raises BrokenBarrierError unless all three children are running at once
            threads[field] = threading.current_thread().name
            return ctx.replace(**{field: value})

        return body

    branch = Branch(
        Pipeline([make_step("MeetX", {"x"}, {"x"}, meet("x", 1))]),
        Pipeline([make_step("MeetY", set(), {"y"}, meet("y", 2))]),
        Pipeline([make_step("MeetZ", set(), {"z"}, meet("z", 3))]),
    )

    out = branch(Ctx(x=0))

    assert (out.x, out.y, out.z) == (1, 2, 3)
    assert len(set(threads.values())) == 3


def test_async_children_run_concurrently_with_acall() -> None:
    async def scenario() -> Ctx:
        barrier = asyncio.Barrier(2)

        def meet(field: str, value: int) -> Any:
            async def body(ctx: Ctx) -> Ctx:
                await asyncio.wait_for(barrier.wait(), TIMEOUT)
                return ctx.replace(**{field: value})

            return body

        branch = Branch(
            Pipeline([async_step("AsyncMeetY", meet("y", 5), provides={"y"})]),
            Pipeline([async_step("AsyncMeetZ", meet("z", 6), provides={"z"})]),
        )
        return await branch.acall(Ctx(x=1))

    out = asyncio.run(scenario())

    assert (out.x, out.y, out.z) == (1, 5, 6)


def test_async_children_run_concurrently_through_run_async() -> None:
    async def scenario() -> list[Any]:
        y_started = asyncio.Event()
        z_started = asyncio.Event()

        async def set_y(ctx: Ctx) -> Ctx:
            y_started.set()
            await asyncio.wait_for(z_started.wait(), TIMEOUT)
            return ctx.replace(y=ctx.x + 1)

        async def set_z(ctx: Ctx) -> Ctx:
            z_started.set()
            await asyncio.wait_for(y_started.wait(), TIMEOUT)
            return ctx.replace(z=ctx.x + 2)

        pipe: Pipeline[Ctx] = Pipeline().then(
            Branch(
                Pipeline([async_step("WaitsForZ", set_y, {"x"}, {"y"})]),
                Pipeline([async_step("WaitsForY", set_z, {"x"}, {"z"})]),
            )
        )
        return await pipe.run_async([Ctx(x=10), Ctx(x=20)])

    results = asyncio.run(scenario())

    assert [r.error for r in results] == [None, None]
    assert [(r.output.y, r.output.z) for r in results] == [(11, 12), (21, 22)]


# -- contracts -------------------------------------------------------------------------------


def test_contracts_are_union_of_children_and_plain_step_is_accepted() -> None:
    first = Pipeline(
        [
            make_step("XToY", {"x"}, {"y"}, lambda ctx: ctx.replace(y=ctx.x * 2)),
            make_step("YToZ", {"y"}, {"z"}, lambda ctx: ctx.replace(z=ctx.y + 1)),
        ]
    )
    plain = make_step("Trail", {"trail"}, {"trail"})  # a bare step, not a Pipeline

    branch = Branch(first, plain)

    assert branch.requires == frozenset({"x", "trail"})
    assert branch.provides == frozenset({"y", "z", "trail"})
    out = branch(Ctx(x=3))
    assert (out.y, out.z, out.trail) == (6, 7, ("Trail",))


def test_branch_without_children_is_rejected() -> None:
    with pytest.raises(ValueError, match="at least one"):
        Branch()


def test_invalid_merge_is_a_type_error_at_construction() -> None:
    with pytest.raises(TypeError, match="merge"):
        Branch(Pipeline([make_step("Noop")]), merge=42)  # type: ignore[arg-type]


# -- failures --------------------------------------------------------------------------------


def test_every_child_completes_and_all_failures_are_reported_in_child_order() -> None:
    last_failed = threading.Event()
    finished: list[str] = []

    def fails_late(ctx: Ctx) -> Ctx:
        # Child 0 fails only after child 2 has already failed.
        assert last_failed.wait(TIMEOUT)
        raise ValueError("child 0")

    def finishes(ctx: Ctx) -> Ctx:
        assert last_failed.wait(TIMEOUT)
        finished.append("child 1")
        return ctx.replace(y=1)

    def fails_early(ctx: Ctx) -> Ctx:
        last_failed.set()
        raise KeyError("child 2")

    def also_finishes(ctx: Ctx) -> Ctx:
        assert last_failed.wait(TIMEOUT)
        finished.append("child 3")
        return ctx.replace(z=1)

    branch = Branch(
        make_step("FailsLate", fn=fails_late),
        make_step("Finishes", provides={"y"}, fn=finishes),
        make_step("FailsEarly", fn=fails_early),
        make_step("AlsoFinishes", provides={"z"}, fn=also_finishes),
    )

    with pytest.raises(BranchError) as info:
        branch(Ctx())

    assert sorted(finished) == ["child 1", "child 3"]
    failures = info.value.failures
    assert [type(f) for f in failures] == [ValueError, KeyError]
    assert [f.args for f in failures] == [("child 0",), ("child 2",)]


def test_async_children_all_complete_and_failures_are_collected() -> None:
    finished: list[str] = []

    async def fails(ctx: Ctx) -> Ctx:
        raise ValueError("boom")

    async def finishes(ctx: Ctx) -> Ctx:
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        finished.append("slow")
        return ctx.replace(y=1)

    branch = Branch(
        Pipeline([async_step("AsyncFails", fails)]),
        Pipeline([async_step("AsyncFinishes", finishes, provides={"y"})]),
    )

    with pytest.raises(BranchError) as info:
        asyncio.run(branch.acall(Ctx()))

    assert finished == ["slow"]
    assert len(info.value.failures) == 1
    assert isinstance(info.value.failures[0], ValueError)


def test_run_reports_branch_failure_with_first_inner_exception_as_cause() -> None:
    second_failed = threading.Event()
    first_error = RuntimeError("first child")
    second_error = ValueError("second child")

    def first(ctx: Ctx) -> Ctx:
        assert second_failed.wait(TIMEOUT)  # fails later in time, but is first by child order
        raise first_error

    def second(ctx: Ctx) -> Ctx:
        second_failed.set()
        raise second_error

    pipe: Pipeline[Ctx] = Pipeline([make_step("Before")]).then(
        Branch(Pipeline([make_step("First", fn=first)]), Pipeline([make_step("Second", fn=second)]))
    )

    [result] = pipe.run([Ctx(x=1)])

    assert not result.ok
    assert result.output is None
    assert result.failed_at == "Branch"
    assert isinstance(result.error, BranchError)
    assert result.error.failures == [first_error, second_error]
    assert result.cause is first_error


# -- merging ---------------------------------------------------------------------------------


def test_raise_on_conflict_takes_every_changed_field_and_unions_metadata() -> None:
    branch = Branch(
        make_step("SetsY", {"x"}, {"y"}, lambda ctx: ctx.replace(y=ctx.x + 1, metadata={"from_y": "a"})),
        make_step("SetsZ", {"x"}, {"z"}, lambda ctx: ctx.replace(z=ctx.x + 2, metadata={"from_z": "b"})),
        merge=MergeStrategy.RAISE_ON_CONFLICT,
    )

    out = branch(Ctx(x=10, metadata={"input": "kept"}))

    assert (out.x, out.y, out.z) == (10, 11, 12)
    assert dict(out.metadata) == {"input": "kept", "from_y": "a", "from_z": "b"}


def test_raise_on_conflict_fails_the_sample_on_different_values() -> None:
    pipe: Pipeline[Ctx] = Pipeline().then(Branch(setter("YIsOne", "y", 1), setter("YIsTwo", "y", 2)))

    [result] = pipe.run([Ctx()])

    assert result.failed_at == "Branch"
    assert isinstance(result.error, ValueError)
    assert "'y'" in str(result.error)


def test_raise_on_conflict_accepts_equal_values() -> None:
    branch = Branch(
        # Equal but distinct objects: the merge must compare values, not identity.
        make_step("BigA", set(), {"y"}, lambda ctx: ctx.replace(y=int("1000001"))),
        make_step("BigB", set(), {"y", "z"}, lambda ctx: ctx.replace(y=int("1000001"), z=3)),
    )

    out = branch(Ctx())

    assert (out.y, out.z) == (1000001, 3)


def test_last_write_wins_takes_the_later_childs_value() -> None:
    branch = Branch(
        make_step("Early", set(), {"y", "z"}, lambda ctx: ctx.replace(y=1, z=5)),
        setter("Late", "y", 2),
        merge=MergeStrategy.LAST_WRITE_WINS,
    )

    out = branch(Ctx())

    assert (out.y, out.z) == (2, 5)


def test_namespaced_keeps_input_fields_and_stores_each_child_output() -> None:
    branch = Branch(
        setter("NsY", "y", 21),
        setter("NsZ", "z", 22),
        make_step("NsTrail", {"trail"}, {"trail"}),
        merge=MergeStrategy.NAMESPACED,
    )
    ctx = Ctx(x=4, metadata={"input": 1})

    out = branch(ctx)

    assert (out.x, out.y, out.z, out.trail) == (4, None, None, ())
    assert set(out.metadata) == {"input", "branch_0", "branch_1", "branch_2"}
    assert out.metadata["input"] == 1
    assert out.metadata["branch_0"] == ctx.replace(y=21)
    assert out.metadata["branch_1"] == ctx.replace(z=22)
    assert out.metadata["branch_2"] == ctx.replace(trail=("NsTrail",))


def test_callable_merge_gets_outputs_in_child_order_and_its_return_is_the_output() -> None:
    calls: list[list[Ctx]] = []
    merged = Ctx(x=99, trail=("merged",))

    def merge(outputs: list[Ctx]) -> Ctx:
        calls.append(list(outputs))
        return merged

    pipe: Pipeline[Ctx] = Pipeline().then(
        Branch(setter("CallY", "y", 1), setter("CallZ", "z", 2), merge=merge)
    )

    [result] = pipe.run([Ctx(x=5)])

    assert result.ok
    assert result.output is merged
    assert calls == [[Ctx(x=5, y=1), Ctx(x=5, z=2)]]


# -- fluent composition ----------------------------------------------------------------------


def test_then_branch_runs_end_to_end() -> None:
    pipe: Pipeline[Ctx] = (
        Pipeline()
        .then(make_step("Double", {"x"}, {"x"}, lambda ctx: ctx.replace(x=ctx.x * 2)))
        .then(
            Branch(
                Pipeline([make_step("PlusOne", {"x"}, {"y"}, lambda ctx: ctx.replace(y=ctx.x + 1))]),
                Pipeline([make_step("TimesTen", {"x"}, {"z"}, lambda ctx: ctx.replace(z=ctx.x * 10))]),
            )
        )
    )

    results = pipe.run([Ctx(x=1), Ctx(x=3)])

    assert pipe.requires == frozenset({"x"})
    assert pipe.provides == frozenset({"x", "y", "z"})
    assert [r.error for r in results] == [None, None]
    assert [(r.output.x, r.output.y, r.output.z) for r in results] == [(2, 3, 20), (6, 7, 60)]


def test_branch_appends_a_branch_of_every_child_and_returns_the_pipeline_for_chaining() -> None:
    # Spec 003, 1.5: branch(*pipelines, merge=...) appends a Branch and returns self.
    both_started = threading.Barrier(2, timeout=TIMEOUT)

    def plus_one(ctx: Ctx) -> Ctx:
        both_started.wait()  # raises BrokenBarrierError unless the two children run at once
        return ctx.replace(y=ctx.x + 1)

    def times_ten(ctx: Ctx) -> Ctx:
        both_started.wait()
        return ctx.replace(z=ctx.x * 10)

    pipe: Pipeline[Ctx] = Pipeline([make_step("Double", {"x"}, {"x"}, lambda ctx: ctx.replace(x=ctx.x * 2))])
    plain = make_step("TimesTen", {"x"}, {"z"}, times_ten)  # a bare step, not a Pipeline

    returned = pipe.branch(Pipeline([make_step("PlusOne", {"x"}, {"y"}, plus_one)]), plain)
    returned.then(make_step("Sum", {"x", "y", "z"}, {"x"}, lambda ctx: ctx.replace(x=ctx.x + ctx.y + ctx.z)))

    assert returned is pipe
    assert [type(step).__name__ for step in pipe.steps] == ["Double", "Branch", "Sum"]
    assert pipe.steps[1].children[1] is plain
    [result] = pipe.run([Ctx(x=3)])
    assert result.error is None
    assert (result.output.x, result.output.y, result.output.z) == (73, 7, 60)


def test_branch_merges_as_told_and_raises_on_conflict_by_default() -> None:
    def conflicting() -> tuple[Any, Any]:
        return setter("YIsOne", "y", 1), setter("YIsTwo", "y", 2)

    [by_default] = Pipeline[Ctx]().branch(*conflicting()).run([Ctx()])
    [last_wins] = Pipeline[Ctx]().branch(*conflicting(), merge=MergeStrategy.LAST_WRITE_WINS).run([Ctx()])
    [own_merge] = Pipeline[Ctx]().branch(*conflicting(), merge=lambda outputs: outputs[0]).run([Ctx()])

    assert by_default.failed_at == "Branch"
    assert "Branch merge conflict on field 'y'" in str(by_default.error)
    assert last_wins.output.y == 2
    assert own_merge.output.y == 1


def test_branch_refuses_a_child_with_an_async_boundary_and_leaves_the_pipeline_as_it_was() -> None:
    pipe: Pipeline[Ctx] = Pipeline([make_step("Start")])
    with pytest.raises(PipelineConfigError, match=r"Branch child 1 .* contains an async_boundary step"):
        pipe.branch(make_step("Fine"), Pipeline([make_step("Boundary", async_boundary=True)]))
    assert [type(step).__name__ for step in pipe.steps] == ["Start"]

"""Pipeline construction: contracts, ordering and configuration are checked when it is built."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from pipeline import (
    Branch,
    MergeStrategy,
    Pipeline,
    PipelineConfigError,
    PipelineOrderError,
    StepProtocol,
)
from tests.support.pipeline import Ctx, make_step


def test_contracts_are_frozensets_of_external_requires_and_all_provides():
    pipe = Pipeline(
        [
            make_step("A", requires={"x"}, provides={"y"}),
            make_step("B", requires={"y", "sample"}, provides={"z"}),
        ]
    )
    assert type(pipe.requires) is frozenset
    assert type(pipe.provides) is frozenset
    assert pipe.requires == {"x", "sample"}
    assert pipe.provides == {"y", "z"}


def test_list_and_set_contracts_of_a_step_are_normalised():
    listed = make_step("Listed")
    listed.requires = ["x", "x"]
    listed.provides = ["y"]
    as_set = make_step("AsSet")
    as_set.requires = {"y", "w"}
    as_set.provides = {"z"}
    pipe = Pipeline([listed, as_set])
    assert type(pipe.requires) is frozenset
    assert type(pipe.provides) is frozenset
    assert pipe.requires == {"x", "w"}
    assert pipe.provides == {"y", "z"}


def test_str_requires_is_rejected_with_type_error():
    step = make_step("Stringly", provides={"y"})
    step.requires = "xy"
    with pytest.raises(TypeError, match="requires"):
        Pipeline([step])


def test_field_provided_only_by_a_later_step_raises_order_error():
    reader = make_step("Reader", requires={"y"}, provides={"z"})
    writer = make_step("Writer", provides={"y"})
    with pytest.raises(PipelineOrderError) as caught:
        Pipeline([make_step("First"), reader, writer])
    error = caught.value
    assert error.field == "y"
    assert error.step == "Reader"
    assert error.provider == "Writer"
    assert "'y'" in str(error)


def test_field_no_step_provides_is_an_external_input():
    pipe = Pipeline(
        [
            make_step("UsesX", requires={"x"}, provides={"y"}, fn=lambda c: c.replace(y=c.x + 1)),
        ]
    )
    assert pipe.requires == {"x"}
    [result] = pipe.run([Ctx(x=41)])
    assert result.ok
    assert result.output.y == 42


def test_consecutive_transforms_of_the_same_field_are_valid():
    add_one = make_step("AddOne", requires={"x"}, provides={"x"}, fn=lambda c: c.replace(x=c.x + 1))
    times_ten = make_step("TimesTen", requires={"x"}, provides={"x"}, fn=lambda c: c.replace(x=c.x * 10))
    pipe = Pipeline([add_one, times_ten])
    assert pipe.requires == {"x"}
    assert pipe.provides == {"x"}
    assert pipe(Ctx(x=1)).x == 20


def test_two_async_boundaries_raise_config_error_naming_both():
    first = make_step("FirstBoundary", async_boundary=True)
    second = make_step("SecondBoundary", async_boundary=True)
    with pytest.raises(PipelineConfigError) as caught:
        Pipeline([first, make_step("Middle"), second])
    assert "FirstBoundary" in str(caught.value)
    assert "SecondBoundary" in str(caught.value)


def _boundary_as_step():
    return make_step("ChildBoundary", async_boundary=True)


def _boundary_in_child_pipeline():
    return Pipeline([make_step("Before"), make_step("ChildBoundary", async_boundary=True)])


def _boundary_in_pipeline_inside_child():
    inner = Pipeline([make_step("ChildBoundary", async_boundary=True)])
    with pytest.warns(UserWarning):
        return Pipeline([make_step("Before"), inner])


@pytest.mark.parametrize(
    "build_child",
    [_boundary_as_step, _boundary_in_child_pipeline, _boundary_in_pipeline_inside_child],
    ids=["step", "child-pipeline", "nested-deeper"],
)
def test_async_boundary_inside_a_branch_child_raises_config_error(build_child):
    child = build_child()
    with pytest.raises(PipelineConfigError, match="async_boundary"):
        Branch(make_step("Sibling"), child)


def _boundary_pipeline(seen_threads):
    def record(name):
        def body(ctx):
            seen_threads.append(threading.get_ident())
            return ctx.replace(trail=(*ctx.trail, name))

        return body

    return Pipeline(
        [
            make_step("InnerFirst", fn=record("InnerFirst")),
            make_step("InnerBoundary", async_boundary=True, fn=record("InnerBoundary")),
            make_step("InnerLast", fn=record("InnerLast")),
        ]
    )


def test_nested_pipeline_with_boundary_warns_instead_of_failing():
    inner = _boundary_pipeline([])
    with pytest.warns(UserWarning, match="async_boundary"):
        outer = Pipeline([make_step("Before"), inner, make_step("After")])
    assert outer.steps[1] is inner


def test_nested_pipeline_with_boundary_runs_all_its_steps_in_sequence():
    seen_threads: list[int] = []
    inner = _boundary_pipeline(seen_threads)
    with pytest.warns(UserWarning):
        outer = Pipeline([make_step("Before"), inner, make_step("After")])
    results = outer.run([Ctx(sample=0), Ctx(sample=1)])
    assert [r.sample for r in results] == [0, 1]
    for result in results:
        assert result.ok
        assert result.done
        assert result.output.trail == ("Before", "InnerFirst", "InnerBoundary", "InnerLast", "After")
    assert seen_threads == [threading.get_ident()] * 6


def test_pipeline_is_itself_a_step():
    assert isinstance(Pipeline([make_step("A")]), StepProtocol)
    assert isinstance(Pipeline(), StepProtocol)


def test_nested_pipeline_contracts_feed_the_outer_contract():
    inner = Pipeline(
        [
            make_step("MakeY", requires={"x"}, provides={"y"}),
            make_step("MakeZ", requires={"y"}, provides={"z"}),
        ]
    )
    outer = Pipeline([make_step("MakeX", provides={"x"}), inner, make_step("UseZ", requires={"z", "w"})])
    assert outer.requires == {"w"}
    assert outer.provides == {"x", "y", "z"}
    with pytest.raises(PipelineOrderError) as caught:
        Pipeline([make_step("NeedsZ", requires={"z"}), inner])
    assert caught.value.field == "z"
    assert caught.value.step == "NeedsZ"
    assert caught.value.provider == "Pipeline"


def test_calling_a_pipeline_runs_its_steps_in_order():
    pipe = Pipeline([make_step("A"), make_step("B"), make_step("C")])
    start = Ctx(trail=("start",))
    out = pipe(start)
    assert out.trail == ("start", "A", "B", "C")
    assert start.trail == ("start",)


def test_fluent_then_returns_same_pipeline_and_matches_list_form():
    def make_y(c):
        return c.replace(y=c.x + 1, trail=(*c.trail, "A"))

    def make_z(c):
        return c.replace(z=c.y * 2, trail=(*c.trail, "B"))

    a = make_step("A", provides={"y"}, fn=make_y)
    b = make_step("B", requires={"y"}, provides={"z"}, fn=make_z)
    fluent = Pipeline()
    assert fluent.then(a).then(b) is fluent
    listed = Pipeline([a, b])
    assert fluent.steps == (a, b)
    assert listed.steps == (a, b)
    assert (fluent.requires, fluent.provides) == (listed.requires, listed.provides)
    [from_fluent] = fluent.run([Ctx(x=3)])
    [from_list] = listed.run([Ctx(x=3)])
    assert from_fluent.output == from_list.output
    assert (from_fluent.output.y, from_fluent.output.z, from_fluent.output.trail) == (4, 8, ("A", "B"))


def test_then_appends_a_branch_with_the_given_merge():
    start = make_step("Start", provides={"x"}, fn=lambda c: c.replace(x=1))
    left = Pipeline([make_step("Left", requires={"x"}, provides={"y"}, fn=lambda c: c.replace(y=10))])
    right = Pipeline([make_step("Right", requires={"x"}, provides={"y"}, fn=lambda c: c.replace(y=20))])
    pipe = Pipeline([start])
    assert pipe.then(Branch(left, right, merge=MergeStrategy.LAST_WRITE_WINS)) is pipe
    assert len(pipe.steps) == 2
    assert pipe.steps[0] is start
    branch = pipe.steps[-1]
    assert isinstance(branch, Branch)
    assert tuple(branch.children) == (left, right)
    assert pipe.provides == {"x", "y"}
    assert pipe(Ctx()).y == 20  # RAISE_ON_CONFLICT (the default) would have failed here


def _order_case():
    return [make_step("Reader", requires={"y"})], make_step("Writer", provides={"y"}), PipelineOrderError


def _boundary_case():
    initial = [make_step("Start"), make_step("Boundary", async_boundary=True)]
    return initial, make_step("SecondBoundary", async_boundary=True), PipelineConfigError


def _not_a_step_case():
    return [make_step("Start")], object(), TypeError


@pytest.mark.parametrize(
    "case", [_order_case, _boundary_case, _not_a_step_case], ids=["order", "boundary", "not-a-step"]
)
def test_rejected_then_leaves_the_pipeline_unchanged(case):
    initial, bad, error = case()
    pipe = Pipeline(initial)
    before = (pipe.steps, pipe.requires, pipe.provides)
    with pytest.raises(error):
        pipe.then(bad)
    assert pipe.steps == tuple(initial)
    assert (pipe.steps, pipe.requires, pipe.provides) == before
    assert pipe(Ctx()).trail == tuple(type(step).__name__ for step in initial)


def test_object_without_requires_is_rejected_naming_it():
    class NoRequires:
        provides = frozenset()

        def __call__(self, ctx):
            return ctx

    with pytest.raises(TypeError, match=r"NoRequires.*'requires'"):
        Pipeline([NoRequires()])


def test_non_callable_step_is_rejected_naming_it():
    class NotCallable:
        requires = frozenset()
        provides = frozenset()

    with pytest.raises(TypeError, match=r"NotCallable.*not callable"):
        Pipeline([NotCallable()])


@pytest.mark.parametrize(("value", "error"), [(0, ValueError), ("2", TypeError)], ids=["zero", "str"])
def test_bad_step_max_workers_is_rejected(value, error):
    with pytest.raises(error, match="max_workers"):
        Pipeline([make_step("Workers", max_workers=value)])


@pytest.mark.parametrize("workers", [0, 1.5], ids=["zero", "fraction"])
def test_run_with_bad_workers_raises_before_any_step_runs(workers):
    calls: list[int] = []
    pipe = Pipeline([make_step("Counted", fn=lambda c: calls.append(1) or c)])
    with pytest.raises(ValueError, match="workers"):
        pipe.run([Ctx()], workers=workers)
    assert calls == []


def test_max_in_flight_smaller_than_workers_is_rejected():
    pipe = Pipeline([make_step("A")])
    with pytest.raises(ValueError, match="max_in_flight"):
        pipe.run([Ctx()], workers=3, max_in_flight=2)
    [result] = pipe.run([Ctx()], workers=3, max_in_flight=3)
    assert result.output.trail == ("A",)


def test_zero_max_background_is_rejected():
    with pytest.raises(ValueError, match="max_background"):
        Pipeline([make_step("A")], max_background=0)


@pytest.mark.parametrize("value", [1, "yes", None])
def test_a_non_bool_exclusive_is_rejected(value: Any) -> None:
    with pytest.raises(TypeError, match=r"exclusive of step .* must be a bool"):
        Pipeline([make_step("Odd", exclusive=value)])


def test_an_exclusive_step_with_several_workers_is_a_config_error() -> None:
    with pytest.raises(PipelineConfigError, match=r"exclusive .* max_workers=2"):
        Pipeline([make_step("Writer", exclusive=True, max_workers=2)])


def test_instance_max_workers_differing_within_a_class_raises_config_error():
    first = make_step("Limited", max_workers=2)
    Pipeline([first, type(first)()])  # same class, same limit: fine
    second = type(first)()
    second.max_workers = 3
    with pytest.raises(PipelineConfigError, match=r"Limited.*max_workers"):
        Pipeline([first, second])


def test_a_read_before_a_transform_of_the_same_field_is_an_external_input() -> None:
    reader = make_step("Reader", requires={"y"})
    transform = make_step("Transform", requires={"y"}, provides={"y"})
    pipeline = Pipeline([reader, transform])
    assert pipeline.requires == {"y"}


def test_a_transform_before_the_producer_of_its_field_is_an_order_error() -> None:
    transform = make_step("Transform", requires={"y"}, provides={"y"})
    producer = make_step("Producer", provides={"y"})
    with pytest.raises(PipelineOrderError) as caught:
        Pipeline([transform, producer])
    assert (caught.value.step, caught.value.provider, caught.value.field) == ("Transform", "Producer", "y")

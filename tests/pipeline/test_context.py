"""StepContext, StepProtocol, SampleResult, the public API and the error hierarchy."""

from __future__ import annotations

import ast
import dataclasses
import inspect
import subprocess
import sys
from pathlib import Path
from types import MappingProxyType

import pytest

import pipeline
import pipeline.errors
from pipeline import (
    Branch,
    BranchError,
    PipelineCancelled,
    PipelineConfigError,
    PipelineError,
    PipelineOrderError,
    SampleResult,
    StepContext,
    StepProtocol,
)
from tests.support.pipeline import Ctx, make_step

PUBLIC_NAMES = [
    "Pipeline",
    "Branch",
    "MergeStrategy",
    "StepContext",
    "StepProtocol",
    "SampleResult",
    "PipelineHook",
    "CancellationToken",
    "PipelineError",
    "PipelineOrderError",
    "PipelineConfigError",
    "BranchError",
    "PipelineCancelled",
]
PIPELINE_MODULES = [
    "__init__",
    "background",
    "branch",
    "cancellation",
    "context",
    "errors",
    "execute",
    "hooks",
    "pipeline",
    "pools",
    "protocol",
    "stepinfo",
]
FORBIDDEN_IMPORTS = {"ace_workers", "celery", "redis"}
PIPELINE_DIR = Path(pipeline.__file__).resolve().parent


def test_step_context_has_sample_and_metadata_fields():
    assert [f.name for f in dataclasses.fields(StepContext)] == ["sample", "metadata"]
    ctx = StepContext(sample="s", metadata={"k": "v"})
    assert ctx.sample == "s"
    assert ctx.metadata["k"] == "v"


@pytest.mark.parametrize(
    ("ctx", "field", "value"),
    [
        (StepContext(sample="s"), "sample", "other"),
        (StepContext(sample="s"), "metadata", {}),
        (Ctx(x=1), "x", 2),
        (Ctx(x=1), "sample", "other"),
    ],
    ids=["base-sample", "base-metadata", "subclass-own-field", "subclass-inherited-field"],
)
def test_assigning_a_field_raises_frozen_instance_error(ctx, field, value):
    before = getattr(ctx, field)
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(ctx, field, value)
    assert getattr(ctx, field) is before


def test_dict_metadata_becomes_read_only_mapping_proxy():
    ctx = Ctx(metadata={"a": 1})
    assert type(ctx.metadata) is MappingProxyType
    with pytest.raises(TypeError):
        ctx.metadata["a"] = 2  # type: ignore[index]
    with pytest.raises(TypeError):
        ctx.metadata["new"] = 3  # type: ignore[index]
    assert dict(ctx.metadata) == {"a": 1}


def test_metadata_dict_is_copied_at_construction():
    source = {"a": 1}
    ctx = Ctx(metadata=source)
    source["a"] = 2
    source["b"] = 3
    assert dict(ctx.metadata) == {"a": 1}


@pytest.mark.parametrize("cls", [StepContext, Ctx], ids=["base", "subclass"])
@pytest.mark.parametrize("metadata", [[("a", 1)], None, "a=1"], ids=["list", "none", "str"])
def test_non_mapping_metadata_raises_type_error_naming_the_class(cls, metadata):
    with pytest.raises(TypeError, match=rf"\b{cls.__name__}\.metadata must be a mapping"):
        cls(metadata=metadata)


def test_replace_returns_same_subclass_and_leaves_original_unchanged():
    original = Ctx(sample="s", x=1, metadata={"k": "v"})
    changed = original.replace(y=5)
    assert type(changed) is Ctx
    assert changed is not original
    assert (changed.sample, changed.x, changed.y, dict(changed.metadata)) == ("s", 1, 5, {"k": "v"})
    assert (original.sample, original.x, original.y) == ("s", 1, None)


def test_replace_with_unknown_field_raises_type_error_naming_it():
    ctx = Ctx(x=1)
    with pytest.raises(TypeError, match=r"\bno_such_field\b"):
        ctx.replace(x=2, no_such_field=1)
    assert ctx.x == 1


def test_replace_keeps_metadata_read_only():
    source = {"b": 2}
    ctx = Ctx(metadata={"a": 1})
    for changed in (ctx.replace(x=3), ctx.replace(metadata=source)):
        assert type(changed.metadata) is MappingProxyType
        with pytest.raises(TypeError):
            changed.metadata["z"] = 0  # type: ignore[index]
    with_new_metadata = ctx.replace(metadata=source)
    source["b"] = 99
    assert dict(with_new_metadata.metadata) == {"b": 2}


def test_step_protocol_is_checked_at_runtime():
    class Complete:
        requires = frozenset({"x"})
        provides = frozenset({"y"})

        def __call__(self, ctx):
            return ctx

    class MissingProvides:
        requires = frozenset({"x"})

        def __call__(self, ctx):
            return ctx

    assert isinstance(Complete(), StepProtocol)
    assert isinstance(make_step("Made", requires={"x"}, provides={"y"}), StepProtocol)
    assert not isinstance(MissingProvides(), StepProtocol)


def test_sample_result_fields_and_defaults():
    fields = [f.name for f in dataclasses.fields(SampleResult)]
    assert fields[:5] == ["sample", "output", "error", "failed_at", "cause"]
    out = Ctx(x=1)
    result = SampleResult("s", out, None, None)
    assert result.sample == "s"
    assert result.output is out
    assert result.error is None
    assert result.failed_at is None
    assert result.cause is None


def test_sample_result_ok_is_true_only_without_error():
    assert SampleResult("s", Ctx(), None, None).ok is True
    failed = SampleResult("s", None, ValueError("boom"), "Step", cause=KeyError("k"))
    assert failed.ok is False
    assert failed.failed_at == "Step"
    assert isinstance(failed.cause, KeyError)
    # an input that is not a context fails before any step: error set, failed_at None
    assert SampleResult("raw", None, TypeError("not a context"), None).ok is False


def test_public_api_is_exactly_the_documented_names_and_all_import():
    assert sorted(pipeline.__all__) == sorted(PUBLIC_NAMES)
    namespace: dict[str, object] = {}
    exec("from pipeline import *", namespace)  # raises if a name in __all__ is missing
    namespace.pop("__builtins__")
    assert set(namespace) == set(PUBLIC_NAMES)
    assert all(namespace[name] is getattr(pipeline, name) for name in PUBLIC_NAMES)


def _imported_roots(source: str) -> set[str]:
    roots: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            roots.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            roots.add(node.module.split(".")[0])
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "import_module":
            roots.update(
                arg.value.split(".")[0]
                for arg in node.args
                if isinstance(arg, ast.Constant) and isinstance(arg.value, str)
            )
    return roots


def test_no_pipeline_module_source_imports_ace_workers_celery_or_redis():
    paths = sorted(PIPELINE_DIR.glob("*.py"))
    assert sorted(path.stem for path in paths) == sorted(PIPELINE_MODULES)
    for path in paths:
        forbidden = _imported_roots(path.read_text()) & FORBIDDEN_IMPORTS
        assert not forbidden, f"{path.name} imports {sorted(forbidden)}"


@pytest.mark.slow
def test_fresh_import_of_every_pipeline_module_loads_no_ace_workers_celery_or_redis():
    modules = ", ".join(f"pipeline.{name}" for name in PIPELINE_MODULES if name != "__init__")
    code = (
        f"import sys, pipeline, {modules}\n"
        f"print(sorted(m for m in sys.modules if m.split('.')[0] in {sorted(FORBIDDEN_IMPORTS)!r}))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=PIPELINE_DIR.parent,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_every_engine_error_derives_from_pipeline_error():
    defined = {
        obj
        for _, obj in inspect.getmembers(pipeline.errors, inspect.isclass)
        if issubclass(obj, BaseException) and obj.__module__ == pipeline.errors.__name__
    }
    assert {PipelineOrderError, PipelineConfigError, BranchError, PipelineCancelled} <= defined
    assert issubclass(PipelineError, Exception)
    for cls in defined:
        assert issubclass(cls, PipelineError), cls


def test_pipeline_order_error_carries_field_step_and_provider():
    error = PipelineOrderError("y", "Reader", "Writer")
    assert (error.field, error.step, error.provider) == ("y", "Reader", "Writer")
    message = str(error)
    assert "'y'" in message
    assert "Reader" in message
    assert "Writer" in message


def test_branch_error_carries_every_failure_in_child_order():
    first, second = ValueError("left broke"), KeyError("right broke")

    def fail_left(ctx):
        raise first

    def fail_right(ctx):
        raise second

    branch = Branch(make_step("Left", fn=fail_left), make_step("Right", fn=fail_right))
    with pytest.raises(BranchError) as caught:
        branch(Ctx())
    assert len(caught.value.failures) == 2
    assert caught.value.failures[0] is first
    assert caught.value.failures[1] is second
    assert "left broke" in str(caught.value)
    assert "right broke" in str(caught.value)


def test_metadata_given_as_mappingproxy_is_copied_too() -> None:
    backing = {"a": 1}
    ctx = StepContext(metadata=MappingProxyType(backing))
    backing["a"] = 2
    assert dict(ctx.metadata) == {"a": 1}

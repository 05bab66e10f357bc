"""Every step's contract as the spec's table states it, learning_tail's composition, validation."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

import numpy as np
import pytest

import ace_workers.steps as steps_package
from ace_workers.core import ACEStepContext, AgentOutput, Sample, Skillbook, UpdateOperation
from ace_workers.dedup import DeduplicationConfig, DeduplicationManager
from ace_workers.roles import SkillManager
from ace_workers.sim import SimulatedLLM
from ace_workers.steps import (
    AgentStep,
    ApplyStep,
    CheckpointStep,
    DeduplicateStep,
    EvaluateStep,
    ExportSkillbookMarkdownStep,
    LoadTracesStep,
    ObservabilityStep,
    OpikStep,
    PersistStep,
    ReflectStep,
    TagStep,
    UpdateStep,
    learning_tail,
)
from pipeline import Pipeline, PipelineOrderError, StepProtocol
from tests.support.roles import (
    FakeAgent,
    FakeDedupManager,
    FakeReflector,
    FakeSkillManager,
    manager_output,
    reflection,
)

NOTHING: frozenset[str] = frozenset()

# name -> (build(skillbook, tmp_path), requires, provides, async_boundary, max_workers, writes_skillbook)
CONTRACTS: dict[
    str, tuple[Callable[[Skillbook, Path], Any], set[str], frozenset[str] | set[str], bool, int, bool]
] = {
    "AgentStep": (
        lambda sb, d: AgentStep(FakeAgent()),
        {"sample", "skillbook"},
        {"agent_output"},
        False,
        1,
        False,
    ),
    "EvaluateStep": (lambda sb, d: EvaluateStep(), {"sample", "agent_output"}, {"trace"}, False, 1, False),
    "ReflectStep": (
        lambda sb, d: ReflectStep(FakeReflector()),
        {"trace", "skillbook"},
        {"reflection"},
        True,
        3,
        False,
    ),
    "TagStep": (lambda sb, d: TagStep(sb), {"reflection"}, NOTHING, False, 1, True),
    "UpdateStep": (
        lambda sb, d: UpdateStep(FakeSkillManager()),
        {"reflection", "skillbook"},
        {"skill_manager_output"},
        False,
        1,
        False,
    ),
    "ApplyStep": (lambda sb, d: ApplyStep(sb), {"skill_manager_output"}, NOTHING, False, 1, True),
    "DeduplicateStep": (
        lambda sb, d: DeduplicateStep(FakeDedupManager(), sb),
        {"global_sample_index"},
        NOTHING,
        False,
        1,
        True,
    ),
    "CheckpointStep": (lambda sb, d: CheckpointStep(d, sb), {"global_sample_index"}, NOTHING, False, 1, True),
    "ObservabilityStep": (lambda sb, d: ObservabilityStep(), {"skillbook"}, NOTHING, False, 1, False),
    # A stand-in client: the contract is read off the step, nothing is logged.
    "OpikStep": (lambda sb, d: OpikStep(client=cast(Any, object())), {"skillbook"}, NOTHING, False, 1, False),
    "LoadTracesStep": (lambda sb, d: LoadTracesStep(), {"sample"}, {"trace"}, False, 1, False),
    "PersistStep": (lambda sb, d: PersistStep(d / "sb.json", sb), {"skillbook"}, NOTHING, False, 1, True),
    "ExportSkillbookMarkdownStep": (
        lambda sb, d: ExportSkillbookMarkdownStep(d / "sb.md", sb),
        {"skillbook"},
        NOTHING,
        False,
        1,
        True,
    ),
}


@pytest.mark.parametrize("name", sorted(CONTRACTS))
def test_step_contract_matches_the_spec_table(name: str, skillbook: Skillbook, tmp_path: Path) -> None:
    build, requires, provides, boundary, max_workers, writes = CONTRACTS[name]
    step = build(skillbook, tmp_path)
    assert type(step).__name__ == name
    assert isinstance(step, StepProtocol)
    assert step.requires == frozenset(requires)
    assert isinstance(step.requires, frozenset)
    assert step.provides == frozenset(provides)
    assert isinstance(step.provides, frozenset)
    assert getattr(step, "async_boundary", False) is boundary
    assert getattr(step, "max_workers", 1) == max_workers
    assert getattr(step, "writes_skillbook", False) is writes
    # The distributed layer reads these off the class, without building a step.
    assert getattr(type(step), "writes_skillbook", False) is writes
    assert getattr(type(step), "max_workers", 1) == max_workers


def test_every_step_is_exported_and_covered_by_the_contract_table() -> None:
    exported_steps = {name for name in steps_package.__all__ if name.endswith("Step")}
    assert exported_steps == set(CONTRACTS)
    assert "learning_tail" in steps_package.__all__
    for name in steps_package.__all__:
        assert hasattr(steps_package, name), name


@pytest.mark.parametrize("interval", [0, -1])
@pytest.mark.parametrize("which", ["dedup", "checkpoint"])
def test_interval_below_one_is_rejected_at_construction(
    which: str, interval: int, skillbook: Skillbook, tmp_path: Path
) -> None:
    with pytest.raises(ValueError, match="interval must be at least 1"):
        if which == "dedup":
            DeduplicateStep(FakeDedupManager(), skillbook, interval=interval)
        else:
            CheckpointStep(tmp_path, skillbook, interval=interval)


@pytest.mark.parametrize("interval", [1.5, "10", True])
def test_interval_that_is_not_an_int_is_rejected(interval: Any, skillbook: Skillbook, tmp_path: Path) -> None:
    with pytest.raises(TypeError, match="interval must be an int"):
        CheckpointStep(tmp_path, skillbook, interval=interval)


@pytest.mark.parametrize("keyword", ["dedup_interval", "checkpoint_interval"])
def test_learning_tail_rejects_intervals_below_one_even_without_the_optional_steps(
    keyword: str, skillbook: Skillbook
) -> None:
    with pytest.raises(ValueError, match=keyword):
        options: dict[str, Any] = {keyword: 0}
        learning_tail(FakeReflector(), FakeSkillManager(), skillbook, **options)


def test_learning_tail_without_options_is_reflect_tag_update_apply(skillbook: Skillbook) -> None:
    reflector, manager = FakeReflector(), FakeSkillManager()
    tail = learning_tail(reflector, manager, skillbook)
    assert [type(step).__name__ for step in tail] == ["ReflectStep", "TagStep", "UpdateStep", "ApplyStep"]
    reflect, tag, update, apply = tail
    assert isinstance(reflect, ReflectStep)
    assert reflect.reflector is reflector
    assert isinstance(update, UpdateStep)
    assert update.skill_manager is manager
    assert isinstance(tag, TagStep)
    assert tag.skillbook is skillbook
    assert isinstance(apply, ApplyStep)
    assert apply.skillbook is skillbook


def test_learning_tail_appends_deduplicate_then_checkpoint(skillbook: Skillbook, tmp_path: Path) -> None:
    dedup = FakeDedupManager()
    tail = learning_tail(
        FakeReflector(),
        FakeSkillManager(),
        skillbook,
        dedup_manager=dedup,
        dedup_interval=3,
        checkpoint_dir=tmp_path / "ckpt",
        checkpoint_interval=5,
    )
    names = [type(step).__name__ for step in tail]
    assert names == ["ReflectStep", "TagStep", "UpdateStep", "ApplyStep", "DeduplicateStep", "CheckpointStep"]
    deduplicate, checkpoint = tail[4], tail[5]
    assert isinstance(deduplicate, DeduplicateStep)
    assert (deduplicate.manager, deduplicate.skillbook, deduplicate.interval) == (dedup, skillbook, 3)
    assert isinstance(checkpoint, CheckpointStep)
    assert (checkpoint.directory, checkpoint.skillbook, checkpoint.interval) == (
        tmp_path / "ckpt",
        skillbook,
        5,
    )


def constant_embedder(texts: list[str]) -> np.ndarray:
    return np.ones((len(texts), 2), dtype=np.float32)


def test_learning_tail_builds_a_dedup_manager_from_dedup_config_on_the_skill_managers_llm(
    skillbook: Skillbook,
) -> None:
    llm = SimulatedLLM()
    config = DeduplicationConfig(embedding_provider=constant_embedder)
    tail = learning_tail(FakeReflector(), SkillManager(llm), skillbook, dedup_config=config, dedup_interval=4)
    assert [type(step).__name__ for step in tail][4:] == ["DeduplicateStep"]
    deduplicate = tail[4]
    assert isinstance(deduplicate, DeduplicateStep)
    assert (deduplicate.skillbook, deduplicate.interval) == (skillbook, 4)
    assert isinstance(deduplicate.manager, DeduplicationManager)
    assert (deduplicate.manager.config, deduplicate.manager.llm) == (config, llm)


def test_learning_tail_refuses_a_dedup_manager_and_a_dedup_config_together(skillbook: Skillbook) -> None:
    with pytest.raises(ValueError, match="give dedup_manager or dedup_config, not both"):
        learning_tail(
            FakeReflector(),
            FakeSkillManager(),
            skillbook,
            dedup_manager=FakeDedupManager(),
            dedup_config=DeduplicationConfig(embedding_provider=constant_embedder),
        )


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        ({}, ["ApplyStep"]),
        ({"dedup_manager": FakeDedupManager()}, ["ApplyStep", "DeduplicateStep"]),
        ({"checkpoint_dir": "ckpt"}, ["ApplyStep", "CheckpointStep"]),
    ],
)
def test_learning_tail_adds_only_the_optional_steps_asked_for(
    options: dict[str, Any], expected: list[str], skillbook: Skillbook
) -> None:
    tail = learning_tail(FakeReflector(), FakeSkillManager(), skillbook, **options)
    assert [type(step).__name__ for step in tail][3:] == expected


def test_pipeline_of_learning_tail_validates_and_needs_trace_skillbook_and_index(
    skillbook: Skillbook, tmp_path: Path
) -> None:
    tail = learning_tail(
        FakeReflector(),
        FakeSkillManager(),
        skillbook,
        dedup_manager=FakeDedupManager(),
        checkpoint_dir=tmp_path,
    )
    pipeline: Pipeline[ACEStepContext] = Pipeline(tail)
    assert pipeline.requires == {"trace", "skillbook", "global_sample_index"}
    assert pipeline.provides == {"reflection", "skill_manager_output"}
    assert pipeline.contains_boundary()


def test_full_ace_pipeline_validates_with_the_head_in_front(skillbook: Skillbook) -> None:
    pipeline: Pipeline[ACEStepContext] = Pipeline(
        [
            AgentStep(FakeAgent()),
            EvaluateStep(),
            *learning_tail(FakeReflector(), FakeSkillManager(), skillbook),
        ]
    )
    assert pipeline.requires == {"sample", "skillbook"}
    assert pipeline.provides == {"agent_output", "trace", "reflection", "skill_manager_output"}


def test_learning_tail_before_its_trace_provider_is_an_order_error(skillbook: Skillbook) -> None:
    with pytest.raises(PipelineOrderError, match="trace"):
        Pipeline([*learning_tail(FakeReflector(), FakeSkillManager(), skillbook), EvaluateStep()])


def test_trace_file_pipeline_validates(skillbook: Skillbook) -> None:
    pipeline: Pipeline[ACEStepContext] = Pipeline(
        [LoadTracesStep(), *learning_tail(FakeReflector(), FakeSkillManager(), skillbook)]
    )
    assert pipeline.requires == {"sample", "skillbook"}


@pytest.mark.parametrize("name", sorted(CONTRACTS))
def test_steps_keep_no_state_between_calls(
    name: str, skillbook: Skillbook, tmp_path: Path, make_ctx: Any
) -> None:
    step = CONTRACTS[name][0](skillbook, tmp_path)
    trace_file = tmp_path / "t.jsonl"
    trace_file.write_text('{"a": 1}\n', encoding="utf-8")
    ctx = make_ctx(
        sample=trace_file if name == "LoadTracesStep" else None,
        trace={"question": "q", "answer": "a", "skill_ids": ["math-00001"]},
        agent_output=AgentOutput(reasoning="r", final_answer="a", skill_ids=["math-00001"]),
        reflection=reflection(("math-00001", "helpful")),
        skill_manager_output=manager_output(
            UpdateOperation(type="TAG", skill_id="math-00001", metadata={"helpful": 1})
        ),
        global_sample_index=10,
    )
    if name != "LoadTracesStep":
        ctx = ctx.replace(sample=Sample(question="q", context="c", ground_truth="a", id="s"))
    state = dict(vars(step))
    first = step(ctx)
    second = step(ctx)
    assert vars(step) == state
    assert isinstance(first, ACEStepContext)
    if not getattr(step, "writes_skillbook", False):
        assert first == second  # same input, same output

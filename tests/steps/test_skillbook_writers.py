"""TagStep, ApplyStep and DeduplicateStep: writes to the injected skillbook, and what they log."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

from ace_workers.core import ACEStepContext, Skillbook, UpdateOperation
from ace_workers.errors import InvalidUpdateError
from ace_workers.steps import ApplyStep, DeduplicateStep, MissingFieldError, TagStep
from pipeline import Pipeline
from tests.support.roles import FakeDedupManager, manager_output, reflection

MakeCtx = Callable[..., ACEStepContext]


def _counts(skillbook: Skillbook, skill_id: str) -> tuple[int, int, int]:
    skill = skillbook.get_skill(skill_id)
    assert skill is not None
    return skill.helpful, skill.harmful, skill.neutral


def test_tag_step_tags_the_real_skillbook(make_ctx: MakeCtx, skillbook: Skillbook) -> None:
    ctx = make_ctx(
        reflection=reflection(
            ("math-00001", "helpful"), ("math-00001", "Harmful "), ("math-00001", "helpful")
        )
    )
    assert TagStep(skillbook)(ctx) is ctx
    assert _counts(skillbook, "math-00001") == (2, 1, 0)


def test_tag_step_skips_a_hallucinated_id_with_a_warning_naming_it(
    make_ctx: MakeCtx, skillbook: Skillbook, caplog: pytest.LogCaptureFixture
) -> None:
    ctx = make_ctx(reflection=reflection(("math-99999", "helpful"), ("math-00001", "helpful")))
    with caplog.at_level(logging.WARNING, logger="ace_workers.steps.tag"):
        TagStep(skillbook)(ctx)
    assert _counts(skillbook, "math-00001") == (1, 0, 0)
    (record,) = [r for r in caplog.records if r.name == "ace_workers.steps.tag"]
    assert record.levelno == logging.WARNING
    assert "'math-99999'" in record.getMessage()
    assert "not found" in record.getMessage()


def test_tag_step_skips_an_unknown_tag_name_with_a_warning(
    make_ctx: MakeCtx, skillbook: Skillbook, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="ace_workers.steps.tag"):
        TagStep(skillbook)(make_ctx(reflection=reflection(("math-00001", "useful"))))
    assert _counts(skillbook, "math-00001") == (0, 0, 0)
    assert "'useful'" in caplog.text
    assert "'math-00001'" in caplog.text


def test_tag_step_without_reflection_names_step_and_field(make_ctx: MakeCtx, skillbook: Skillbook) -> None:
    with pytest.raises(MissingFieldError, match=r"TagStep needs ctx\.reflection"):
        TagStep(skillbook)(make_ctx())


def test_apply_step_applies_the_batch_to_the_real_skillbook(make_ctx: MakeCtx, skillbook: Skillbook) -> None:
    output = manager_output(
        UpdateOperation(
            type="ADD", section="checks", content="Re-add the digits.", insight_source={"epoch": 1}
        ),
        UpdateOperation(type="UPDATE", skill_id="math-00001", content="Add units first, then carry."),
    )
    ctx = make_ctx(skill_manager_output=output)
    step = ApplyStep(skillbook)
    state = dict(vars(step))
    assert step(ctx) is ctx
    assert vars(step) == state  # the report is logged, not kept
    assert len(skillbook) == 2
    (added,) = [s for s in skillbook.skills() if s.section == "checks"]
    assert added.content == "Re-add the digits."
    [origin] = added.occurrences
    assert (origin["operation_type"], origin["epoch"]) == ("ADD", 1)
    updated = skillbook.get_skill("math-00001")
    assert updated is not None
    assert updated.content == "Add units first, then carry."


def test_apply_step_logs_the_operations_it_skipped(
    make_ctx: MakeCtx, skillbook: Skillbook, caplog: pytest.LogCaptureFixture
) -> None:
    output = manager_output(
        UpdateOperation(type="TAG", skill_id="ghost-00007", metadata={"helpful": 1}),
        UpdateOperation(type="ADD", section="checks", content="Re-add the digits."),
        UpdateOperation(type="REMOVE", skill_id="ghost-00008"),
    )
    with caplog.at_level(logging.WARNING, logger="ace_workers.steps.apply"):
        ApplyStep(skillbook)(make_ctx(skill_manager_output=output, global_sample_index=12))
    assert len(skillbook) == 2
    (record,) = [r for r in caplog.records if r.name == "ace_workers.steps.apply"]
    message = record.getMessage()
    assert "sample 12" in message
    assert "skipped 2 operations" in message
    assert "#0 TAG 'ghost-00007'" in message
    assert "#2 REMOVE 'ghost-00008'" in message


def test_apply_step_applies_nothing_from_a_malformed_batch(make_ctx: MakeCtx, skillbook: Skillbook) -> None:
    output = manager_output(
        UpdateOperation(type="ADD", section="checks", content="fine"),
        UpdateOperation(type="UPDATE", skill_id="math-00001", content=""),
    )
    with pytest.raises(InvalidUpdateError, match="operation #1"):
        ApplyStep(skillbook)(make_ctx(skill_manager_output=output))
    assert len(skillbook) == 1


def test_apply_step_without_output_names_step_and_field(make_ctx: MakeCtx, skillbook: Skillbook) -> None:
    with pytest.raises(MissingFieldError, match=r"ApplyStep needs ctx\.skill_manager_output"):
        ApplyStep(skillbook)(make_ctx())


def test_deduplicate_step_runs_only_on_multiples_of_its_interval(
    make_ctx: MakeCtx, skillbook: Skillbook
) -> None:
    manager = FakeDedupManager()
    step = DeduplicateStep(manager, skillbook, interval=3)
    for index in range(1, 10):
        step(make_ctx(global_sample_index=index))
    assert len(manager.calls) == 3  # samples 3, 6 and 9
    assert all(book is skillbook for book, _ in manager.calls)


def test_deduplicate_step_logs_the_report_at_info(
    make_ctx: MakeCtx, skillbook: Skillbook, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, logger="ace_workers.steps.deduplicate"):
        DeduplicateStep(FakeDedupManager("a ~ b (0.91)"), skillbook, interval=2)(
            make_ctx(global_sample_index=4)
        )
        DeduplicateStep(FakeDedupManager(None), skillbook, interval=2)(make_ctx(global_sample_index=6))
    (record,) = caplog.records
    assert record.levelno == logging.INFO
    assert "sample 4" in record.getMessage()
    assert "a ~ b (0.91)" in record.getMessage()


def test_deduplicate_step_default_interval_is_ten(skillbook: Skillbook) -> None:
    assert DeduplicateStep(FakeDedupManager(), skillbook).interval == 10


def test_apply_steps_never_overlap_when_the_foreground_runs_four_samples_at_once(
    make_ctx: MakeCtx,
) -> None:
    """Foreground concurrency is run(workers=...); the exclusive lock keeps skillbook writes serial."""
    workers = 4
    everyone_in = threading.Barrier(workers, timeout=10)
    inside = 0
    max_inside = 0
    count_lock = threading.Lock()

    class ProbedSkillbook(Skillbook):
        def apply_update(self, update: Any) -> Any:
            nonlocal inside, max_inside
            with count_lock:
                inside += 1
                max_inside = max(max_inside, inside)
            time.sleep(0.005)  # long enough for an unguarded second call to arrive
            with count_lock:
                inside -= 1
            return super().apply_update(update)

    class Gate:
        requires: frozenset[str] = frozenset()
        provides: frozenset[str] = frozenset()

        def __call__(self, ctx: ACEStepContext) -> ACEStepContext:
            everyone_in.wait()  # proves the four samples really are in the foreground at once
            return ctx

    skillbook = ProbedSkillbook()
    contexts = [
        make_ctx(
            skill_manager_output=manager_output(
                UpdateOperation(type="ADD", section="math", content=f"check units, case {i}")
            )
        )
        for i in range(4 * workers)
    ]

    results = Pipeline([Gate(), ApplyStep(skillbook)]).run(contexts, workers=workers)

    assert all(r.ok for r in results), [r.error for r in results]
    assert max_inside == 1
    assert len(skillbook.skills()) == 4 * workers

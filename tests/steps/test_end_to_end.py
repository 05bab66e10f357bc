"""The ACE pipeline end to end with fake roles: answers now, learning in background threads."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

from ace_workers.core import ACEStepContext, Sample, SimpleEnvironment, Skillbook, SkillbookView
from ace_workers.steps import (
    AgentStep,
    EvaluateStep,
    LoadTracesStep,
    MissingFieldError,
    ObservabilityStep,
    TagStep,
    learning_tail,
)
from pipeline import Pipeline, PipelineHook
from tests.support.roles import TIMEOUT, FakeAgent, FakeDedupManager, FakeReflector, FakeSkillManager

TAIL = [
    "ReflectStep",
    "TagStep",
    "UpdateStep",
    "ApplyStep",
    "DeduplicateStep",
    "CheckpointStep",
    "ObservabilityStep",
]


class ThreadRecorder(PipelineHook):
    """Records which thread ran each step."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.threads: dict[str, set[str]] = {}

    def before_step(self, name: str, ctx: Any) -> None:
        with self.lock:
            self.threads.setdefault(name, set()).add(threading.current_thread().name)


def _contexts(skillbook: Skillbook, count: int) -> list[ACEStepContext]:
    view = SkillbookView(skillbook)
    return [
        ACEStepContext(
            sample=Sample(
                question=f"What is {i}+{i}?", context="arithmetic", ground_truth=str(2 * i), id=f"s-{i}"
            ),
            skillbook=view,
            step_index=i,
            total_steps=count,
            global_sample_index=i,
        )
        for i in range(1, count + 1)
    ]


def test_ace_pipeline_answers_in_the_foreground_and_learns_in_background_threads(
    skillbook: Skillbook, tmp_path: Path
) -> None:
    gate = threading.Event()
    agent = FakeAgent(answer="4")
    reflector = FakeReflector(gate=gate)
    manager = FakeSkillManager()
    dedup = FakeDedupManager()
    recorder = ThreadRecorder()
    checkpoints = tmp_path / "ckpt"
    pipeline: Pipeline[ACEStepContext] = Pipeline(
        [
            AgentStep(agent),
            EvaluateStep(SimpleEnvironment()),
            *learning_tail(
                reflector,
                manager,
                skillbook,
                dedup_manager=dedup,
                dedup_interval=2,
                checkpoint_dir=checkpoints,
                checkpoint_interval=2,
            ),
            ObservabilityStep(),
        ],
        hooks=[recorder],
    )

    results = pipeline.run(_contexts(skillbook, 4))

    # The reflector is held at its gate: every answer is back, no learning has happened yet.
    assert [r.done for r in results] == [False] * 4
    assert [
        r.output.trace["answer"] for r in results if r.output is not None and isinstance(r.output.trace, dict)
    ] == ["4"] * 4
    assert len(skillbook) == 1
    assert not checkpoints.exists()

    gate.set()
    pipeline.wait_for_background(timeout=TIMEOUT)

    assert all(r.done for r in results), [(r.failed_at, r.error) for r in results]
    assert all(r.ok for r in results), [(r.failed_at, r.error) for r in results]
    assert pipeline.background_stats()["completed"] == 4
    # The skillbook changed: one lesson per sample, and the cited skill tagged helpful four times.
    assert len(skillbook) == 5
    cited = skillbook.get_skill("math-00001")
    assert cited is not None
    assert cited.helpful == 4
    lessons = [s for s in skillbook.skills() if s.section == "checks"]
    assert sorted(s.occurrences[0]["sample_id"] for s in lessons) == ["s-1", "s-2", "s-3", "s-4"]
    assert {s.occurrences[0]["actor"] for s in lessons} == {"skill_manager"}
    assert [o["actor"] for o in cited.occurrences[1:]] == ["reflector"] * 4  # its four TAGs
    assert {s.content for s in lessons} == {f"Check the answer to What is {i}+{i}?." for i in range(1, 5)}
    # Feedback from the environment reached the reflector.
    assert {c["feedback"] for c in reflector.calls} == {
        "Incorrect: expected '2', got '4'.",
        "Correct.",
        "Incorrect: expected '6', got '4'.",
        "Incorrect: expected '8', got '4'.",
    }
    # Periodic steps ran on samples 2 and 4.
    assert len(dedup.calls) == 2
    assert {p.name for p in checkpoints.iterdir()} == {
        "checkpoint_2.json",
        "checkpoint_4.json",
        "latest.json",
    }
    assert len(json.loads((checkpoints / "latest.json").read_text(encoding="utf-8"))["skills"]) == 5

    # Head in the caller's thread; every tail step on its own class's background pool.
    main = threading.current_thread().name
    assert recorder.threads["AgentStep"] == {main}
    assert recorder.threads["EvaluateStep"] == {main}
    assert {c["thread"] for c in agent.calls} == {main}
    for name in TAIL:
        threads = recorder.threads[name]
        assert main not in threads
        assert all(t.startswith(f"pipeline-{name}-") for t in threads), (name, threads)
    assert all(c["thread"].startswith("pipeline-ReflectStep-") for c in reflector.calls)
    assert all(c["thread"].startswith("pipeline-UpdateStep-") for c in manager.calls)


def test_a_custom_pipeline_missing_a_field_fails_that_sample_naming_step_and_field(
    skillbook: Skillbook,
) -> None:
    pipeline: Pipeline[ACEStepContext] = Pipeline([TagStep(skillbook)])
    (result,) = pipeline.run([ACEStepContext(skillbook=SkillbookView(skillbook))])
    assert result.failed_at == "TagStep"
    assert isinstance(result.error, MissingFieldError)
    assert (result.error.step, result.error.field) == ("TagStep", "reflection")


def test_trace_files_feed_the_learning_tail_and_a_missing_file_fails_only_its_sample(
    skillbook: Skillbook, tmp_path: Path
) -> None:
    good = tmp_path / "good.jsonl"
    good.write_text('{"role": "user", "text": "hi"}\nnot json\n', encoding="utf-8")
    reflector = FakeReflector()
    pipeline: Pipeline[ACEStepContext] = Pipeline(
        [LoadTracesStep(), *learning_tail(reflector, FakeSkillManager(), skillbook)]
    )
    view = SkillbookView(skillbook)
    contexts = [
        ACEStepContext(sample=path, skillbook=view, global_sample_index=i)  # type: ignore[arg-type]
        for i, path in enumerate([good, tmp_path / "missing.jsonl"], start=1)
    ]
    results = pipeline.run(contexts)
    pipeline.wait_for_background(timeout=TIMEOUT)
    assert results[0].ok, results[0].error
    assert results[1].failed_at == "LoadTracesStep"
    assert isinstance(results[1].error, FileNotFoundError)
    assert str(tmp_path / "missing.jsonl") in str(results[1].error)
    (call,) = reflector.calls
    assert call["trace"] == [{"role": "user", "text": "hi"}]
    assert len(skillbook) == 2

"""The runners: epoch loop rules, background learning, index arithmetic, checkpoints, learning."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from ace_workers.core import ACEStepContext, Sample, SimpleEnvironment, Skillbook
from ace_workers.roles import Agent, Reflector, SkillManager
from ace_workers.runners import ACE, ACELiteLLM, TraceAnalyser
from ace_workers.sim import SimulatedLLM, make_tasks


class RecordIndices:
    """An extra tail step that records the indices the runner put on each context."""

    requires = frozenset({"epoch", "total_epochs", "step_index", "total_steps", "global_sample_index"})
    provides: frozenset[str] = frozenset()

    def __init__(self) -> None:
        self.seen: list[tuple[int, int, int, int | None, int]] = []

    def __call__(self, ctx: ACEStepContext) -> ACEStepContext:
        self.seen.append(
            (ctx.epoch, ctx.total_epochs, ctx.step_index, ctx.total_steps, ctx.global_sample_index)
        )
        return ctx


def make_ace(llm: SimulatedLLM | None = None, **options: object) -> ACE:
    llm = llm or SimulatedLLM()
    return ACE.from_roles(
        agent=Agent(llm),
        reflector=Reflector(llm),
        skill_manager=SkillManager(llm),
        environment=SimpleEnvironment(),
        **options,  # type: ignore[arg-type]
    )


def accuracy(results: list, epoch: int) -> float:  # type: ignore[type-arg]
    answered = [r for r in results if r.output is not None and r.output.epoch == epoch]
    correct = [r for r in answered if r.output.agent_output.final_answer == r.sample.ground_truth]
    return len(correct) / len(answered)


def test_multi_epoch_needs_a_sequence() -> None:
    ace = make_ace()
    with pytest.raises(ValueError, match="Sequence"):
        ace.run(iter(make_tasks(3)), epochs=2)


def test_an_iterator_runs_one_epoch_with_indices_counted_from_one() -> None:
    recorder = RecordIndices()
    ace = make_ace(extra_steps=[recorder])
    results = ace.run(iter(make_tasks(3)))
    assert len(results) == 3
    assert all(r.ok for r in results)
    # The recorder runs in the background tail, where samples may finish out of order.
    assert sorted(recorder.seen) == [(1, 1, 1, None, 1), (1, 1, 2, None, 2), (1, 1, 3, None, 3)]


@pytest.mark.parametrize("epochs", [0, -1, 1.5, True])
def test_bad_epochs_are_rejected(epochs: object) -> None:
    with pytest.raises(ValueError, match="epochs"):
        make_ace().run(make_tasks(2), epochs=epochs)  # type: ignore[arg-type]


def test_global_sample_index_counts_across_epochs() -> None:
    recorder = RecordIndices()
    ace = make_ace(extra_steps=[recorder])
    ace.run(make_tasks(3), epochs=2)
    assert sorted(recorder.seen) == [
        (1, 2, 1, 3, 1),
        (1, 2, 2, 3, 2),
        (1, 2, 3, 3, 3),
        (2, 2, 1, 3, 4),
        (2, 2, 2, 3, 5),
        (2, 2, 3, 3, 6),
    ]


def test_wait_false_returns_after_the_answers_and_learning_completes_later() -> None:
    gate = threading.Event()

    class Gate:
        """Holds the learning tail until the test opens it."""

        requires = frozenset({"skill_manager_output"})
        provides: frozenset[str] = frozenset()

        def __call__(self, ctx: ACEStepContext) -> ACEStepContext:
            assert gate.wait(timeout=30)
            return ctx

    ace = make_ace(extra_steps=[Gate()])
    results = ace.run(make_tasks(4), wait=False)
    assert all(r.output is not None for r in results)
    assert all(r.output.agent_output is not None for r in results)
    assert not any(r.done for r in results)
    assert ace.learning_stats["active"] == 4
    gate.set()
    ace.wait_for_background(timeout=30)
    assert all(r.done for r in results)
    assert all(r.ok for r in results)
    assert ace.learning_stats == {"active": 0, "completed": 4, "failed": 0, "max_backlog": 256}
    assert len(ace.skillbook) > 0


def test_each_epoch_sees_the_learning_of_the_one_before() -> None:
    seen_sizes: list[tuple[int, int]] = []

    class SkillbookSize:
        """A foreground step recording how many skills the agent saw, per epoch."""

        requires = frozenset({"skillbook", "epoch"})
        provides: frozenset[str] = frozenset()

        def __call__(self, ctx: ACEStepContext) -> ACEStepContext:
            assert ctx.skillbook is not None
            seen_sizes.append((ctx.epoch, len(ctx.skillbook)))
            return ctx

    llm = SimulatedLLM()
    skillbook = Skillbook()
    steps = ACE.build_steps(
        agent=Agent(llm), reflector=Reflector(llm), skill_manager=SkillManager(llm), skillbook=skillbook
    )
    from pipeline import Pipeline

    ace = ACE(Pipeline([SkillbookSize(), *steps]), skillbook)
    ace.run(make_tasks(5, topics=5), epochs=2)
    learned_in_epoch_one = {size for epoch, size in seen_sizes if epoch == 2}
    assert learned_in_epoch_one == {5}


def test_checkpoint_files_follow_the_global_index(tmp_path: Path) -> None:
    ace = make_ace(checkpoint_dir=tmp_path, checkpoint_interval=2)
    ace.run(make_tasks(5), epochs=2)
    names = sorted(p.name for p in tmp_path.iterdir())
    expected = sorted([f"checkpoint_{i}.json" for i in (2, 4, 6, 8, 10)] + ["latest.json"])
    assert names == expected
    latest = Skillbook.load_from_file(tmp_path / "latest.json")
    assert latest.to_dict() == Skillbook.load_from_file(tmp_path / "checkpoint_10.json").to_dict()


def test_ace_learning_curve_rises_across_epochs() -> None:
    samples = make_tasks(30, seed=7, topics=5)
    ace = make_ace(SimulatedLLM(trust_threshold=3, seed=7))
    results = ace.run(samples, epochs=3)
    assert len(results) == 90
    assert all(r.ok for r in results)
    assert accuracy(results, 1) < 0.5
    assert accuracy(results, 3) > 0.9


def test_trace_analyser_learns_rules_from_recorded_traces() -> None:
    llm = SimulatedLLM()
    tasks = make_tasks(10, topics=5)
    traces = [
        {
            "question": t.question,
            "answer": "no idea",
            "ground_truth": t.ground_truth,
            "feedback": "Incorrect.",
        }
        for t in tasks
    ]
    analyser = TraceAnalyser.from_roles(reflector=Reflector(llm), skill_manager=SkillManager(llm))
    results = analyser.run(traces)
    assert all(r.ok for r in results)
    assert {s.section for s in analyser.skillbook.skills()} == {t.metadata["topic"] for t in tasks}


def test_ace_lite_llm_asks_learns_and_load_swaps_the_skillbook_everywhere(tmp_path: Path) -> None:
    llm = SimulatedLLM()
    tasks = make_tasks(10, topics=5)
    ace = ACELiteLLM(llm, environment=SimpleEnvironment())
    before = ace.ask(tasks[0].question)
    assert before != tasks[0].ground_truth
    ace.learn(tasks)
    assert ace.ask(tasks[0].question) == tasks[0].ground_truth
    ace.save(tmp_path / "learned.json")

    empty = tmp_path / "empty.json"
    Skillbook().save_to_file(empty)
    ace.load(empty)
    assert len(ace.skillbook) == 0
    assert ace.ask(tasks[0].question) != tasks[0].ground_truth
    ace.learn(tasks[:2])
    # The runner built after load writes to the loaded skillbook, not the old one.
    assert len(ace.skillbook) > 0
    assert len(Skillbook.load_from_file(tmp_path / "learned.json")) == 5


def test_learn_from_feedback_needs_a_previous_ask() -> None:
    with pytest.raises(ValueError, match="ask"):
        ACELiteLLM(SimulatedLLM()).learn_from_feedback("wrong")


def test_learn_from_feedback_learns_the_rule_from_the_last_answer() -> None:
    task = make_tasks(1)[0]
    ace = ACELiteLLM(SimulatedLLM())
    assert ace.ask(task.question) != task.ground_truth
    assert ace.learn_from_feedback("Incorrect.", ground_truth=task.ground_truth) is True
    assert ace.ask(task.question) == task.ground_truth


def _never_ending() -> Iterator[Sample]:
    while True:
        yield from make_tasks(1)


def test_a_stream_of_samples_is_consumed_lazily() -> None:
    pulled = 0

    def counted() -> Iterator[Sample]:
        nonlocal pulled
        for sample in _never_ending():
            pulled += 1
            yield sample

    ace = make_ace()
    stream = counted()
    first_ten = (next(stream) for _ in range(10))
    results = ace.run(first_ten)
    assert len(results) == 10
    assert pulled == 10

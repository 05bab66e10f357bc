"""The real roles and the SimulatedLLM learn the hidden rules over epochs (no runner yet)."""

from __future__ import annotations

from ace_workers.core import SimpleEnvironment, Skillbook, SkillbookView
from ace_workers.roles import Agent, Reflector, SkillManager
from ace_workers.sim import SimulatedLLM, make_tasks

N_TASKS, N_TOPICS, EPOCHS = 30, 5, 3


def run_epochs(llm: SimulatedLLM, book: Skillbook) -> list[float]:
    """Agent -> evaluate -> reflect -> update -> apply, per sample; the accuracy of each epoch."""
    agent, reflector, manager = Agent(llm), Reflector(llm), SkillManager(llm)
    environment = SimpleEnvironment()
    view = SkillbookView(book)
    samples = make_tasks(N_TASKS, seed=7, topics=N_TOPICS)
    accuracies = []
    for epoch in range(1, EPOCHS + 1):
        correct = 0.0
        for index, sample in enumerate(samples, 1):
            output = agent.generate(sample.question, sample.context, view)
            result = environment.evaluate(sample, output)
            correct += result.metrics["accuracy"]
            reflection = reflector.reflect(
                sample.question, output, view, ground_truth=result.ground_truth, feedback=result.feedback
            )
            update = manager.update_skills(
                reflection,
                view,
                question_context=sample.context,
                progress=f"Epoch {epoch}/{EPOCHS}, sample {index}/{len(samples)}",
            )
            book.apply_update(update.update)
        accuracies.append(correct / len(samples))
    return accuracies


def test_accuracy_rises_over_epochs_as_skills_earn_trust() -> None:
    # A new skill needs 3 net helpful votes before the simulated agent relies on it,
    # so each topic costs several failures: a visible learning curve.
    book = Skillbook()
    accuracies = run_epochs(SimulatedLLM(trust_threshold=3, seed=1), book)
    assert accuracies[0] < 0.5
    assert accuracies[2] > 0.9
    assert accuracies == sorted(accuracies)
    # One skill per topic, each stating its rule; nothing duplicated, nothing harmful.
    assert len(book) == N_TOPICS
    assert {s.section for s in book.skills()} == {s.metadata["topic"] for s in make_tasks(N_TASKS, seed=7)}
    assert all(s.harmful == 0 for s in book.skills())
    assert all(s.helpful >= 3 for s in book.skills())


def test_with_immediate_trust_each_topic_costs_exactly_one_failure() -> None:
    accuracies = run_epochs(SimulatedLLM(seed=1), Skillbook())
    assert accuracies[0] == (N_TASKS - N_TOPICS) / N_TASKS
    assert accuracies[1:] == [1.0, 1.0]

"""Evaluation arithmetic, task files, and the evaluations record (real Redis, the simulated LLM)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import redis

from ace_workers.core import Skillbook
from ace_workers.distributed.ops.errors import TaskFileError
from ace_workers.distributed.ops.evaluation import (
    EvaluationTarget,
    VersionScore,
    evaluate_versions,
    read_task_file,
    resolve_targets,
)
from ace_workers.distributed.ops.promotion import is_better, promote_label
from ace_workers.distributed.store.errors import CorruptDataError, LabelMovedError, VersionRangeError
from ace_workers.distributed.store.evaluations import SkillbookEvaluations
from ace_workers.distributed.store.store import RedisSkillbookStore
from ace_workers.redaction import redactor_for
from ace_workers.roles import Agent
from ace_workers.sim import TOPICS, SimulatedLLM, make_tasks

ZORB = TOPICS[0]
REDACTOR = redactor_for("default")  # what an unset ACE_REDACT means


def write_tasks(path: Path, n: int = 4) -> Path:
    """``n`` zorb tasks as a task file."""
    path.write_text(
        "".join(
            json.dumps({"question": t.question, "ground_truth": t.ground_truth}) + "\n"
            for t in make_tasks(n, seed=1, topics=[ZORB])
        )
    )
    return path


@pytest.mark.parametrize(
    ("candidate", "target", "total", "margin", "better"),
    [
        (19, 18, 20, 0.0, True),  # one task better
        (18, 18, 20, 0.0, False),  # a tie is refused
        (19, 18, 20, 0.05, False),  # a gain of exactly the margin is refused
        (20, 18, 20, 0.05, True),
        (1, 0, 3, 0.3, True),  # 1/3 > 0.3
        (1, 0, 10, 0.1, False),  # 1/10 is 0.1, not more
        (10, 20, 20, 0.0, False),  # worse
        (0, 0, 0, 0.0, False),  # no tasks decide nothing
    ],
)
def test_the_promotion_rule_is_strictly_more_than_the_margin(
    candidate: float, target: float, total: int, margin: float, better: bool
) -> None:
    assert is_better(candidate, target, total, margin) is better


def test_a_score_reports_accuracy_tokens_per_task_and_an_unknown_cost() -> None:
    score = VersionScore(
        "prod", 3, "prod", total=4, score=3.0, prompt_tokens=100, completion_tokens=20, cost=None
    )
    assert score.accuracy == 0.75
    assert score.tokens == 120
    data = score.to_dict()
    assert data["tokens"] == {"prompt": 100, "completion": 20, "total": 120, "per_task": 30.0}
    assert (data["correct"], data["tasks"], data["cost"]) == (3.0, 4, None)


def test_a_task_file_is_read_with_its_digest_and_defaults(tmp_path: Path) -> None:
    path = write_tasks(tmp_path / "t.jsonl")
    tasks = read_task_file(path)
    assert len(tasks.samples) == 4
    assert tasks.samples[0].context == ""
    assert tasks.describe()["count"] == 4
    before = tasks.digest
    path.write_text(path.read_text() + "\n")  # one more blank line: same tasks, other bytes
    assert read_task_file(path).digest != before
    assert read_task_file(path).samples == tasks.samples


@pytest.mark.parametrize(
    ("content", "line", "problem"),
    [
        (b'{"question": "q", "ground_truth": "a"}\n\x80x\n', 2, "not JSON: not utf-8 text"),
        (b'{"question": "", "ground_truth": "a"}\n', 1, "'question' must be a non-empty string"),
        (b'{"question": "q", "ground_truth": 4}\n', 1, "'ground_truth' must be a non-empty string"),
        (b'{"question": "q", "ground_truth": "a", "context": 3}\n', 1, "'context' must be a string"),
        (b'{"question": "q", "ground_truth": "a", "metadata": []}\n', 1, "'metadata' must be an object"),
        (b'{x\n{"question": 1}\n', 1, "not JSON"),  # the first bad line is named
        (b'{"question": "q", "ground_truth": "a"}\n\n{x\n', 3, "not JSON"),
    ],
)
def test_a_bad_task_line_is_an_error_naming_the_file_and_line(
    tmp_path: Path, content: bytes, line: int, problem: str
) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(content)
    with pytest.raises(TaskFileError) as raised:
        read_task_file(path)
    assert (raised.value.path, raised.value.line) == (str(path), line)
    assert problem in str(raised.value)
    assert str(raised.value).startswith(f"{path}:{line}: ")


def test_a_missing_task_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(TaskFileError, match=r"nowhere\.jsonl: cannot read it: No such file"):
        read_task_file(tmp_path / "nowhere.jsonl")


def book_with_the_zorb_rule(store: RedisSkillbookStore) -> None:
    """Version 1: empty of zorb; version 2: the zorb rule."""
    book = Skillbook()
    book.add_skill("general", "Read the question.")
    store.import_skillbook(book)
    book.add_skill("zorb", ZORB.rule)
    store.import_skillbook(book, replace=True)


def test_a_version_named_twice_is_answered_once(store: RedisSkillbookStore, tmp_path: Path) -> None:
    book_with_the_zorb_rule(store)
    store.labels.set("prod", 2, actor="user:ann")
    llm = SimulatedLLM()
    tasks = read_task_file(write_tasks(tmp_path / "t.jsonl"))
    targets = resolve_targets(store, versions=[1, 2, 2], labels=["prod"])
    assert [t.name for t in targets] == ["v1", "v2", "prod"]
    report = evaluate_versions(store, targets, tasks, Agent(llm), actor="user:ann", redactor=REDACTOR)
    assert llm.call_count("AgentOutput") == 8  # two versions, four tasks each
    assert [(s.name, s.version, s.accuracy) for s in report.scores] == [
        ("v1", 1, 0.0),
        ("v2", 2, 1.0),
        ("prod", 2, 1.0),
    ]
    assert report.score_of("prod").tokens == report.score_of("v2").tokens > 0


def test_failed_agent_calls_score_wrong_and_are_counted(store: RedisSkillbookStore, tmp_path: Path) -> None:
    book_with_the_zorb_rule(store)
    tasks = read_task_file(write_tasks(tmp_path / "t.jsonl"))
    report = evaluate_versions(
        store,
        [EvaluationTarget(2)],
        tasks,
        Agent(SimulatedLLM(failure_rate=1.0)),
        actor="user:ann",
        redactor=REDACTOR,
        threads=2,
    )
    (score,) = report.scores
    assert (score.errors, score.accuracy) == (4, 0.0)
    assert score.first_error is not None and "simulated provider failure" in score.first_error


def test_a_version_the_skillbook_lacks_is_refused_before_any_answer(store: RedisSkillbookStore) -> None:
    book_with_the_zorb_rule(store)
    with pytest.raises(VersionRangeError, match="no version 5"):
        resolve_targets(store, versions=[5])


def test_promote_refuses_bad_arguments(store: RedisSkillbookStore) -> None:
    book_with_the_zorb_rule(store)
    store.labels.set("canary", 2, actor="user:ann")
    with pytest.raises(ValueError, match="both label 'prod'"):
        promote_label(store, "prod", "prod", actor="user:ann")
    with pytest.raises(ValueError, match="margin must be at least 0 and below 1"):
        promote_label(store, "canary", "prod", actor="user:ann", margin=1.0)
    with pytest.raises(ValueError, match="needs the tasks"):
        promote_label(store, "canary", "prod", actor="user:ann", if_better=True)
    assert store.labels.get("prod") is None


def test_the_evaluations_record_keeps_the_newest(
    redis_client: redis.Redis, store: RedisSkillbookStore
) -> None:
    record = SkillbookEvaluations(redis_client, store.keys, kept=3)
    for number in range(5):
        record.record({"n": number})
    assert record.recent() == [{"n": 4}, {"n": 3}, {"n": 2}]
    assert record.recent(1) == [{"n": 4}]
    redis_client.lpush(store.keys.evaluations, "[1]")
    with pytest.raises(CorruptDataError, match="not a JSON object"):
        record.recent()


def test_a_target_moved_during_the_evaluation_is_not_overwritten(
    store: RedisSkillbookStore, tmp_path: Path
) -> None:
    book_with_the_zorb_rule(store)
    store.labels.set("prod", 1, actor="user:ann")
    store.labels.set("canary", 2, actor="user:ann")
    moved: list[int] = []

    def someone_moves_prod(name: str, done: int, total: int) -> None:
        # Another operator moves prod while the candidate's first task is being scored.
        if not moved:
            moved.append(store.labels.set("prod", 2, actor="user:bob").to_version or 0)

    with pytest.raises(LabelMovedError, match="expected at version 1 but is at 2"):
        promote_label(
            store,
            "canary",
            "prod",
            actor="user:ann",
            if_better=True,
            tasks=read_task_file(write_tasks(tmp_path / "t.jsonl")),
            agent=Agent(SimulatedLLM()),
            redactor=REDACTOR,
            progress=someone_moves_prod,
        )
    assert [(m.actor, m.to_version) for m in store.labels.history("prod")] == [
        ("user:bob", 2),
        ("user:ann", 1),
    ]
    (recorded,) = store.evaluations.recent()
    assert recorded["promotion"]["decision"] == "conflict"

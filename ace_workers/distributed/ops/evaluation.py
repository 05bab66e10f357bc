"""Offline evaluation: the agent answers one task set with each of several skillbook versions.

Each version (a number, or the one a label points at) is read with
``store.snapshot_at`` and handed, read-only, to the Agent role exactly as the
fleet's execute step builds it (:func:`fleet_agent`: the agent model, the prompt
budget, and embedding relevance when deduplication is on). Every answer is
scored against its task's ground truth by a
:class:`~ace_workers.core.environments.TaskEnvironment` (default
:class:`~ace_workers.core.environments.SimpleEnvironment`: exact match, ignoring
case and spacing), and the tokens the calls report are summed. A version is
evaluated once however many names it is given (``--version 7 --label prod``
with prod at 7). Every evaluation is recorded in the skillbook's evaluations list.

The tasks are redacted as the producer redacts a trace (:func:`fleet_redactor`: the
redactor of the skillbook's tenant) before any prompt is built from them: each task
in a session of its own, shared by its question, context, ground truth and every
answer to it, so the same value is the same placeholder in all of them and exact
match still scores an answer that names a secret the ground truth holds.

Runs in this process: with the simulated LLM it is deterministic, which the
harmful-rule test relies on.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import io
import logging
import time
import uuid
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, TypeVar

from ...core.environments import Sample, SimpleEnvironment, TaskEnvironment
from ...core.jsonl import SkippedLines, iter_json_lines
from ...core.skill import utc_now
from ...counts import counted, noun_for
from ...errors import LLMError, one_line
from ...protocols import AgentLike, SkillbookLike
from ...redaction.context_redaction import redact_in_session
from ...redaction.redactor import RedactionSession, Redactor, json_text
from ...roles import Agent
from ..settings import DEDUP_OFF
from ..store.store import RedisSkillbookStore
from ..worker.runtime import WorkerRuntime
from .errors import TaskFileError

__all__ = [
    "EvaluationReport",
    "EvaluationTarget",
    "TaskSet",
    "VersionScore",
    "evaluate_versions",
    "fleet_agent",
    "fleet_redactor",
    "read_task_file",
    "resolve_targets",
]

logger = logging.getLogger(__name__)

# Called after each answered task: (the target's name, tasks answered, tasks in the set).
OnProgress = Callable[[str, int, int], None]
_SAMPLE_FIELDS = tuple(f.name for f in fields(Sample))
T = TypeVar("T")


# -- the task set ------------------------------------------------------------------------------
@dataclass(frozen=True)
class TaskSet:
    """The tasks of one evaluation, and what identifies the file they came from."""

    path: str
    digest: str  # "sha256:" and the hex digest of the file's bytes: the same tasks, the same digest
    samples: tuple[Sample, ...]

    def describe(self) -> dict[str, Any]:
        """What a report records of the task set: the file's name, its digest, the number of tasks."""
        return {"file": self.path, "digest": self.digest, "count": len(self.samples)}


def read_task_file(path: Path | str) -> TaskSet:
    """The tasks of a JSONL file (a sample per line: question, ground_truth, optional context, ...).

    The format ``ace-workers learn --recipe ace`` reads, stricter: every task needs a
    ground truth to be scored, and a line that is not JSON is an error, not skipped,
    since an evaluation over fewer tasks than the file holds would compare less than it
    says. Raises TaskFileError naming the file and the line.
    """
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise TaskFileError(str(path), f"cannot read it: {exc.strerror or exc}") from exc
    skipped = SkippedLines(str(path))
    samples = []
    for number, value in iter_json_lines(io.BytesIO(data), skipped):
        if skipped:
            break  # a line before this one is not JSON: the first error is the one to name
        samples.append(_task_from_line(value, str(path), number))
    if skipped:
        number, reason = skipped.first[0]
        raise TaskFileError(str(path), reason, number)
    if not samples:
        raise TaskFileError(str(path), "holds no task: give one JSON object a line")
    return TaskSet(str(path), "sha256:" + hashlib.sha256(data).hexdigest(), tuple(samples))


def _task_from_line(value: Any, path: str, number: int) -> Sample:
    if not isinstance(value, dict):
        raise TaskFileError(path, f"a JSON {type(value).__name__}, not a task object", number)
    unknown = sorted(set(value) - set(_SAMPLE_FIELDS))
    if unknown:
        raise TaskFileError(
            path,
            f"unknown {noun_for(len(unknown), 'field')} {', '.join(unknown)}; "
            f"a task has only {', '.join(_SAMPLE_FIELDS)}",
            number,
        )
    for name in ("question", "ground_truth"):
        if not isinstance(value.get(name), str) or not value[name].strip():
            raise TaskFileError(path, f"{name!r} must be a non-empty string (a task is scored by it)", number)
    for name in ("context", "id"):
        if value.get(name) is not None and not isinstance(value[name], str):
            raise TaskFileError(path, f"{name!r} must be a string", number)
    if not isinstance(value.get("metadata", {}), dict):
        raise TaskFileError(path, "'metadata' must be an object", number)
    return Sample(**{**value, "context": value.get("context") or ""})


# -- what is evaluated ---------------------------------------------------------------------------
@dataclass(frozen=True)
class EvaluationTarget:
    """One version to evaluate, and the label it was named by (None: named by its number)."""

    version: int
    label: str | None = None

    @property
    def name(self) -> str:
        """How reports name it: the label, else ``v`` and the version."""
        return self.label if self.label is not None else f"v{self.version}"


def resolve_targets(
    store: RedisSkillbookStore, versions: Sequence[int] = (), labels: Sequence[str] = ()
) -> list[EvaluationTarget]:
    """The versions, then the labels' versions, once each by name.

    Raises UnknownLabelError for a label the skillbook does not have and
    VersionRangeError for a version it does not have (or ChangelogTrimmedError
    when its change log no longer reaches back to it).
    """
    targets = [EvaluationTarget(store.labels.require(label), label) for label in dict.fromkeys(labels)]
    targets = [EvaluationTarget(version) for version in dict.fromkeys(versions)] + targets
    for version in sorted({target.version for target in targets}):
        store.snapshot_at(version)  # checked before any answer is paid for
    return targets


def fleet_agent(runtime: WorkerRuntime, skillbook: str) -> Agent:
    """The Agent the fleet's execute step runs for ``skillbook``: its model, prompt budget and relevance."""
    settings = runtime.settings
    # As WorkerRuntime.pipeline: with embeddings at hand, an over-budget skillbook is cut by similarity.
    relevance = runtime.deduplicator(skillbook).relevance() if settings.dedup_provider != DEDUP_OFF else None
    return Agent(
        runtime.llm(settings.agent_model), prompt_budget=settings.prompt_budget(), relevance=relevance
    )


def fleet_redactor(runtime: WorkerRuntime, skillbook: str) -> Redactor:
    """What redacts an evaluation of ``skillbook``: its tenant's redactor, as the producer picks it."""
    return runtime.skillbook_redactor(skillbook)


@dataclass(frozen=True)
class _Task:
    """A task as every prompt and the judge see it, and the session its answers are redacted in."""

    sample: Sample
    session: RedactionSession | None = None  # None: the tenant redacts nothing

    def redacted(self, value: T) -> T:
        """``value`` (an answer, an error's text) redacted as the task was: a value, its placeholder."""
        return value if self.session is None else redact_in_session(self.session, value)


def _redacted_tasks(tasks: TaskSet, redactor: Redactor) -> list[_Task]:
    """Each task redacted in a session of its own, before any prompt is built from it."""
    if redactor.off:
        return [_Task(sample) for sample in tasks.samples]
    redacted = []
    for sample in tasks.samples:
        # A task file made from redacted traces holds placeholders: new ones take the next numbers.
        session = redactor.session(reserved_later=functools.partial(_sample_text, sample))
        redacted.append(_Task(redact_in_session(session, sample, redactor.spec.kept), session))
    return redacted


def _sample_text(sample: Sample) -> str:
    return json_text(dataclasses.asdict(sample))


# -- the report ------------------------------------------------------------------------------------
@dataclass
class VersionScore:
    """How one version did on the task set: right answers, failed calls, tokens, time."""

    name: str
    version: int
    label: str | None
    total: int
    score: float = 0.0  # the environment's accuracy metric summed: the right answers for exact match
    errors: int = 0  # tasks whose agent call failed (scored 0)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float | None = 0.0  # None once a call reported no price: a partial sum would understate it
    seconds: float = 0.0
    first_error: str | None = None

    @property
    def accuracy(self) -> float:
        """The share of the tasks answered right (``score / total``)."""
        return self.score / self.total if self.total else 0.0

    @property
    def tokens(self) -> int:
        """Prompt and completion tokens together."""
        return self.prompt_tokens + self.completion_tokens

    def to_dict(self) -> dict[str, Any]:
        """The score as a JSON object."""
        return {
            "name": self.name,
            "version": self.version,
            "label": self.label,
            "tasks": self.total,
            "correct": self.score,
            "errors": self.errors,
            "accuracy": self.accuracy,
            "tokens": {
                "prompt": self.prompt_tokens,
                "completion": self.completion_tokens,
                "total": self.tokens,
                "per_task": self.tokens / self.total if self.total else 0.0,
            },
            "cost": self.cost,
            "seconds": round(self.seconds, 3),
            "first_error": self.first_error,
        }


@dataclass
class EvaluationReport:
    """One evaluation: the task set, each version's score side by side, who ran it and when."""

    skillbook: str
    tasks: dict[str, Any]
    scores: list[VersionScore]
    model: str
    actor: str
    id: str = field(default_factory=lambda: uuid.uuid4().hex[:12])
    time: str = field(default_factory=utc_now)
    seconds: float = 0.0
    promotion: dict[str, Any] | None = None  # set when the evaluation decided a promotion

    def score_of(self, name: str) -> VersionScore:
        """The score of the target named ``name`` (a label, or ``v`` and a version); KeyError if none."""
        for score in self.scores:
            if score.name == name:
                return score
        raise KeyError(name)

    def to_dict(self) -> dict[str, Any]:
        """The report as a JSON object, as recorded in the evaluations list and the label log."""
        return {
            "id": self.id,
            "skillbook": self.skillbook,
            "time": self.time,
            "seconds": round(self.seconds, 3),
            "actor": self.actor,
            "model": self.model,
            "tasks": self.tasks,
            "versions": [score.version for score in self.scores],
            "labels": {score.label: score.version for score in self.scores if score.label is not None},
            "results": [score.to_dict() for score in self.scores],
            "promotion": self.promotion,
        }


# -- running it ------------------------------------------------------------------------------------
def evaluate_versions(
    store: RedisSkillbookStore,
    targets: Sequence[EvaluationTarget],
    tasks: TaskSet,
    agent: AgentLike,
    *,
    actor: str,
    redactor: Redactor,
    model: str = "",
    environment: TaskEnvironment | None = None,
    progress: OnProgress | None = None,
    threads: int = 1,
    record: bool = True,
) -> EvaluationReport:
    """Answer every task with each target's version; score, count tokens, and (``record``) log the report.

    ``redactor`` (:func:`fleet_redactor`) redacts the tasks before the first prompt, and
    the answers and errors before they are scored or reported. ``threads`` answers that
    many tasks of a version at once (the agent and its client must be thread-safe, as
    the fleet's are). A failed agent call scores 0 and is counted in ``errors``; the
    evaluation goes on, so one flaky call does not cost the run.
    """
    if not targets:
        raise ValueError("nothing to evaluate: name at least one version or label")
    if threads < 1:
        raise ValueError(f"threads must be >= 1, got {threads}")
    judge = environment if environment is not None else SimpleEnvironment()
    started = time.monotonic()
    redacted = _redacted_tasks(tasks, redactor)
    scored: dict[int, VersionScore] = {}
    scores = []
    for target in targets:
        done = scored.get(target.version)
        if done is None:
            _, view = store.snapshot_at(target.version)
            done = _score_version(target, view, redacted, agent, judge, progress, threads)
            scored[target.version] = done
        scores.append(
            done
            if done.name == target.name
            else dataclasses.replace(done, name=target.name, label=target.label)
        )
    report = EvaluationReport(
        store.name, tasks.describe(), scores, model, actor, seconds=time.monotonic() - started
    )
    logger.info(
        "skillbook %r evaluated on %s: %s",
        store.name,
        counted(len(tasks.samples), "task"),
        ", ".join(f"{s.name} (v{s.version}) {s.accuracy:.1%}" for s in scores),
    )
    if record:
        store.evaluations.record(report.to_dict())
    return report


def _score_version(
    target: EvaluationTarget,
    skillbook: SkillbookLike,
    tasks: Sequence[_Task],
    agent: AgentLike,
    judge: TaskEnvironment,
    progress: OnProgress | None,
    threads: int,
) -> VersionScore:
    started = time.monotonic()
    total = len(tasks)
    score = VersionScore(target.name, target.version, target.label, total=total)

    # Each task is answered once per version and the versions one after another, so a task's
    # redaction session is used by one thread at a time.
    def answer(task: _Task) -> tuple[float, dict[str, Any], str | None]:
        sample = task.sample
        try:
            output = agent.generate(question=sample.question, context=sample.context, skillbook=skillbook)
        except LLMError as exc:
            usage = getattr(exc, "usage", None)  # RetriesExhausted: the tokens its attempts cost
            # The report keeps this line: a provider's error may quote what it was sent or replied.
            return 0.0, {"usage": usage} if isinstance(usage, dict) else {}, task.redacted(one_line(str(exc)))
        # A secret the agent knew from elsewhere becomes the placeholder the ground truth holds.
        result = judge.evaluate(sample=sample, agent_output=task.redacted(output))
        return float(result.metrics.get("accuracy", 0.0)), dict(output.raw or {}), None

    with ThreadPoolExecutor(max_workers=threads, thread_name_prefix="evaluate") as pool:
        for index, (value, raw, error) in enumerate(pool.map(answer, tasks), start=1):
            score.score += value
            _add_usage(score, raw)
            if error is not None:
                score.errors += 1
                score.first_error = score.first_error or error
            if progress is not None:
                progress(target.name, index, total)
    score.seconds = time.monotonic() - started
    return score


def _add_usage(score: VersionScore, raw: dict[str, Any]) -> None:
    usage = raw.get("usage") or {}
    score.prompt_tokens += int(usage.get("prompt_tokens") or 0)
    score.completion_tokens += int(usage.get("completion_tokens") or 0)
    cost = raw.get("cost")
    if score.cost is not None:
        score.cost = score.cost + float(cost) if isinstance(cost, (int, float)) else None

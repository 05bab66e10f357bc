"""Learning quality: what the fleet learns, on held-out tasks, as the skillbook grows and feedback lies.

Every setting learns a task family's training tasks (recorded failures, TraceAnalyser's
recipe) for ``--epochs`` epochs through the real pipeline: a Redis of its own, the
fleet's Celery app and in-process Celery workers (``local_workers``: the setting's
learn threads and the single writer), the producer's batches. Each epoch is one
batch, the training traces in a new seeded order. By default the model is the
simulator with paraphrasing on (ACE_SIM_PARAPHRASE: one rule learned in different
words from different samples) on its task family, offline and deterministic up to
the order in which concurrent learn slots finish.

Reported per setting (one row each):

* accuracy after each epoch on held-out tasks, of the version served (the head;
  ``prod`` in the promotion settings), answered by the fleet's Agent;
* rule recall: of the held-out questions whose rule the served skillbook has
  learned, the share whose Agent prompt (default prompt budget, the fleet's
  relevance) shows a skill stating it. The distractor settings serve what the 4-slot
  setting learned among 10,000 or 100,000 skills that state no rule (most about other
  work, a tenth in the task family's words, twenty per topic naming it), measured
  after one import; ``--learn-at-scale`` learns among them from scratch instead (slow);
* skills per rule: active skills stating a rule over the distinct rules they state
  (1.0: no duplicates, however worded);
* proposals per idea (review mode: ADD, UPDATE and REMOVE wait for a person):
  pending proposals over the distinct rules they propose;
* harm: with a share of misleading feedback (the right answer called wrong, the
  topic's wrong rule stated), the share of misled topics whose wrong rule the served
  version holds at the end. "promote" settings move ``prod`` to each epoch's head
  unconditionally; "gated" ones only when it is better on a validation set
  (``label promote --if-better``).

Targets (issue 42): <= 1.1 skills per rule, <= 1.2 proposals per idea, recall >= 0.95
at 100,000 distractors, 30% misleading gated within 10 points of clean, 16 slots
within 5 points of 1 slot (accuracy after the last epoch).

    python benchmarks/learning_quality.py [--small] [--model sim|LITELLM_MODEL]
        [--tasks sim|FILE.jsonl|reasoning-gym:NAME] [--skill-lookup off|similar|tools]
        [--epochs 4] [--latency 0.05] [--learn-at-scale] [--redis-url redis://127.0.0.1:6379/14] [--json]

Redis: a private embedded server by default, or database 14 of a shared one (``--redis-url``).
With a real model (``--model openai/gpt-4o-mini``) the same settings run on it; a model
whose key is not set stops the run with one line, before anything is learned.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import os
import random
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from bench_db import bench_redis
from quality_measures import (
    active_skills,
    distractor_skillbook,
    harmful_topics,
    ideas_of,
    rule_recall,
    skills_per_rule,
)
from quality_tasks import SIM_FAMILY, TaskFamily, load_family

from ace_workers.core import Skill
from ace_workers.distributed.llms import check_models, model_client
from ace_workers.distributed.ops.evaluation import TaskSet, fleet_agent, fleet_redactor
from ace_workers.distributed.ops.promotion import promote_label
from ace_workers.distributed.service import Service, build_service, local_workers
from ace_workers.distributed.settings import SIM_MODEL, WorkerSettings
from ace_workers.distributed.store.review_policy import parse_policy
from ace_workers.distributed.store.store import RedisSkillbookStore
from ace_workers.distributed.worker.runtime import WorkerRuntime
from ace_workers.errors import SettingsError
from ace_workers.roles import Agent

ACTOR = "bench:learning_quality"
SERVED_LABEL, CANDIDATE_LABEL = "prod", "canary"
REVIEW_POLICY = "ADD=review,UPDATE=review,REMOVE=review,TAG=auto"
SKILL_LOOKUPS = ("off", "similar", "tools")
BASELINE = "4 learn slots"  # clean feedback, no distractors: what the other settings differ from
TARGETS = {
    "skills_per_rule": 1.1,
    "proposals_per_idea": 1.2,
    "recall": 0.95,
    "misleading": 0.10,
    "slots": 0.05,
}


@dataclass(frozen=True)
class Setting:
    """One row of the table: how the fleet learns."""

    name: str
    slots: int = 4
    distractors: int = 0
    misleading: float = 0.0
    promotion: str | None = None  # None: serve the head; "promote": move prod each epoch; "gated": if better
    review: bool = False


@dataclass
class Row:
    """What one setting measured."""

    setting: Setting
    accuracy: list[float] = field(default_factory=list)
    recall: tuple[int, int] | None = None  # (shown, needed)
    rule_skills: tuple[int, int] | None = None  # (skills stating a rule, distinct rules)
    proposals: tuple[int, int] | None = None  # (pending proposals, distinct ideas)
    harm: tuple[int, int] | None = None  # (misled topics whose wrong rule is served, misled topics)
    seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        """The row as JSON-ready data."""
        return {**asdict(self), "setting": asdict(self.setting)}


@dataclass(frozen=True)
class Scale:
    """How big a run is: the full table, or ``--small`` for tests."""

    topics: int  # of the simulator's family
    train: int
    held_out: int
    epochs: int
    distractors: tuple[int, ...]
    slots: tuple[int, ...]
    misleading: tuple[float, ...]


FULL = Scale(
    topics=8,
    train=24,
    held_out=40,
    epochs=6,  # noisy feedback costs epochs: 30% misleading catches up with clean at the fifth
    distractors=(10_000, 100_000),
    slots=(1, 4, 16),
    misleading=(0.1, 0.3),
)
SMALL = Scale(
    topics=4, train=12, held_out=12, epochs=3, distractors=(1_000,), slots=(1, 4), misleading=(0.3,)
)


def settings_of(scale: Scale) -> list[Setting]:
    """The rows of a run: clean learning at each slot count, distractors, review mode, misleading feedback."""
    rows = [Setting(f"{slots} learn slot{'s' if slots > 1 else ''}", slots=slots) for slots in scale.slots]
    rows += [Setting(f"{count:,} distractors", distractors=count) for count in scale.distractors]
    rows.append(Setting("review mode", review=True))
    for share in scale.misleading:
        rows.append(Setting(f"{share:.0%} misleading, promote", misleading=share, promotion="promote"))
        rows.append(Setting(f"{share:.0%} misleading, gated", misleading=share, promotion="gated"))
    return rows


# -- running one setting ---------------------------------------------------------------------
@dataclass
class Run:
    """What every setting shares: the fleet, the task family and the run's options."""

    service: Service
    family: TaskFamily
    epochs: int
    seed: int = 7
    timeout: float = 600.0
    log: Callable[[str], None] = print
    learn_at_scale: bool = False  # distractor settings learn from scratch among their distractors
    baseline: Setting = field(default_factory=lambda: Setting(BASELINE))
    baseline_skills: list[Skill] = field(default_factory=list)  # what the baseline learned, once it ran


def run_setting(run: Run, setting: Setting, index: int) -> Row:
    """Learn the family's training tasks under ``setting`` into a new skillbook; measure it.

    A distractor setting learns nothing unless ``run.learn_at_scale``: it serves the skills the
    baseline setting learned among its distractors, measured after its import.
    """
    started = time.perf_counter()
    name = f"quality-{index}"
    store = run.service.runtime.store(name)
    row = Row(setting)
    if setting.distractors:
        learned = () if run.learn_at_scale else run.baseline_skills
        book = distractor_skillbook(
            setting.distractors, run.family.held_out, run.family.topics, seed=run.seed, learned=learned
        )
        store.import_skillbook(book)
        run.log(f"  {setting.name}: {len(book):,} skills imported in {time.perf_counter() - started:.1f} s")
        if not run.learn_at_scale:
            row.accuracy.append(accuracy(run, name, store, None))
    if setting.review:
        store.review.set_policy(
            parse_policy(REVIEW_POLICY), actor=ACTOR, note="learning quality: review mode"
        )
    if not setting.distractors or run.learn_at_scale:
        learn(run, store, setting, row)
    measure(run, store, setting, row)
    if setting == run.baseline:
        run.baseline_skills = store.snapshot()[1].skills()  # a small skillbook: copies are cheap
    row.seconds = time.perf_counter() - started
    run.log(f"  {setting.name}: {format_row(row)} ({row.seconds:.1f} s)")
    return row


def learn(run: Run, store: RedisSkillbookStore, setting: Setting, row: Row) -> None:
    """The epochs: each one batch of the training traces in a new order, then the served accuracy."""
    traces = run.family.training_traces(setting.misleading, run.seed)
    with local_workers(run.service, learn_threads=setting.slots):
        for epoch in range(1, run.epochs + 1):
            order = random.Random(run.seed * 1000 + epoch).sample(traces, len(traces))
            status = run.service.producer.enqueue_traces(order, store.name).wait(timeout=run.timeout)
            if (status.done, status.failed) != (len(order), 0):
                raise SystemExit(f"{setting.name}, epoch {epoch}: {status.done} done, {status.failed} failed")
            served = serve(run, store, setting)
            row.accuracy.append(accuracy(run, store.name, store, served))


def serve(run: Run, store: RedisSkillbookStore, setting: Setting) -> str | None:
    """Move the served label as the setting says; the label served (None: the head)."""
    if setting.promotion is None:
        return None
    store.labels.set(CANDIDATE_LABEL, store.version(), actor=ACTOR, note="this epoch's head")
    gated = setting.promotion == "gated"
    tasks = TaskSet("validation", "", run.family.validation)
    promote_label(
        store,
        CANDIDATE_LABEL,
        SERVED_LABEL,
        actor=ACTOR,
        if_better=gated,
        tasks=tasks if gated else None,
        agent=evaluation_agent(run.service.runtime, store.name) if gated else None,
        redactor=fleet_redactor(run.service.runtime, store.name) if gated else None,
        model=run.service.runtime.settings.agent_model,
    )
    return SERVED_LABEL


def accuracy(run: Run, name: str, store: RedisSkillbookStore, label: str | None) -> float:
    """The share of held-out tasks the fleet's Agent answers right with the served version."""
    _, view = store.snapshot_of(label)
    agent = evaluation_agent(run.service.runtime, name)
    right = 0.0
    for sample in run.family.held_out:
        output = agent.generate(question=sample.question, context=sample.context, skillbook=view)
        right += run.family.environment.evaluate(sample, output).metrics.get("accuracy", 0.0)
    return right / len(run.family.held_out)


def evaluation_agent(runtime: WorkerRuntime, skillbook: str) -> Agent:
    """The fleet's Agent for ``skillbook`` (its model, prompt budget and relevance); with the simulator,
    one that does not sleep: simulated latency is there to make learn slots overlap, not to slow scoring."""
    agent = fleet_agent(runtime, skillbook)
    settings = runtime.settings
    if settings.agent_model != SIM_MODEL:
        return agent
    without_sleep = dataclasses.replace(settings, sim_latency_seconds=0.0)
    return Agent(
        model_client(SIM_MODEL, without_sleep),
        prompt_budget=settings.prompt_budget(),
        relevance=agent.relevance,
    )


def measure(run: Run, store: RedisSkillbookStore, setting: Setting, row: Row) -> None:
    """Recall, duplication, proposals and harm, read from the skillbook as it now is."""
    topics = run.family.topics
    if not topics:
        return  # the family's rules are unknown: only accuracy can be measured
    label = SERVED_LABEL if setting.promotion else None
    _, view = store.snapshot_of(label)
    served = active_skills(view)
    agent = fleet_agent(run.service.runtime, store.name)
    row.recall = rule_recall(
        served,
        run.family.held_out,
        run.family.topic_of,
        lambda sample: agent.build_prompt(sample.question, sample.context, view),
    )
    head = served if label is None else active_skills(store.snapshot()[1])
    row.rule_skills = skills_per_rule(head, topics)
    if setting.review:
        pending = store.review.proposals(limit=10_000)
        row.proposals = len(pending), len(ideas_of((p.operations for p in pending), topics))
    if setting.misleading:
        misled = misled_topics(run.family, setting.misleading, run.seed)
        row.harm = len(harmful_topics(served, topics) & misled), len(misled)


def misled_topics(family: TaskFamily, share: float, seed: int) -> set[str]:
    """The topics some misleading trace of this share was about."""
    traces = family.training_traces(share, seed)
    return {
        topic.name
        for trace in traces
        for topic in family.topics
        if topic.is_wrongly_stated_by(trace.get("feedback", ""))
    }


# -- the table --------------------------------------------------------------------------------
def _ratio(pair: tuple[int, int] | None, digits: int = 2) -> str:
    if pair is None:
        return "-"
    part, whole = pair
    return f"{part / whole:.{digits}f}" if whole else "n/a"


def format_row(row: Row) -> str:
    """One setting's figures on one line."""
    epochs = " ".join(f"{value:4.0%}" for value in row.accuracy)
    return (
        f"{epochs}  recall {_ratio(row.recall)}  skills/rule {_ratio(row.rule_skills)}  "
        f"proposals/idea {_ratio(row.proposals)}  harm {_ratio(row.harm)}"
    )


def print_table(rows: Sequence[Row], header: str) -> None:
    """The whole table, then each target and the figure it is checked against."""
    epochs = max((len(row.accuracy) for row in rows), default=0)
    print(header)
    columns = [f"{'setting':<26}", *(f"{'e' + str(n):>5}" for n in range(1, epochs + 1))]
    columns += [f"{name:>9}" for name in ("recall", "skl/rule", "prop/idea", "harm")] + [f"{'s':>6}"]
    print(" ".join(columns))
    for row in rows:
        missing = ["    -"] * (epochs - len(row.accuracy))  # a setting measured after its import only
        cells = [f"{row.setting.name:<26}", *missing, *(f"{value:>5.0%}" for value in row.accuracy)]
        cells += [f"{_ratio(pair):>9}" for pair in (row.recall, row.rule_skills, row.proposals, row.harm)]
        print(" ".join([*cells, f"{row.seconds:>6.1f}"]))
    for line in verdicts(rows):
        print(line)


def verdicts(rows: Sequence[Row]) -> list[str]:
    """Each target of issue 42 with the figure measured against it, where the run measured it."""
    lines = []
    duplication = [_share(r.rule_skills) for r in rows if _share(r.rule_skills) is not None]
    if duplication:
        worst = max(value for value in duplication if value is not None)
        lines.append(
            _verdict("skills per rule, worst setting", worst, TARGETS["skills_per_rule"], below=True)
        )
    for row in (r for r in rows if r.setting.review and _share(r.proposals) is not None):
        per_idea = _share(row.proposals) or 0.0
        lines.append(_verdict("proposals per idea", per_idea, TARGETS["proposals_per_idea"], below=True))
    largest = max(
        (r for r in rows if r.setting.distractors), key=lambda r: r.setting.distractors, default=None
    )
    if largest is not None and _share(largest.recall) is not None:
        what = f"recall at {largest.setting.distractors:,} distractors"
        lines.append(_verdict(what, _share(largest.recall) or 0.0, TARGETS["recall"]))
    clean = sorted((r for r in rows if _is_clean(r)), key=lambda r: r.setting.slots)
    baseline = next((r for r in clean if r.setting.slots == Setting.slots), None)
    gated = [r for r in rows if r.setting.promotion == "gated"]
    if baseline is not None and gated:
        worst_gated = max(gated, key=lambda r: r.setting.misleading)
        gap = baseline.accuracy[-1] - worst_gated.accuracy[-1]
        what = f"{worst_gated.setting.name} below clean"
        lines.append(_verdict(what, gap, TARGETS["misleading"], below=True, percent=True))
    if len(clean) > 1:
        gap = clean[0].accuracy[-1] - clean[-1].accuracy[-1]
        what = f"{clean[-1].setting.slots} slots below {clean[0].setting.slots}"
        lines.append(_verdict(what, gap, TARGETS["slots"], below=True, percent=True))
    return lines


def _share(pair: tuple[int, int] | None) -> float | None:
    return pair[0] / pair[1] if pair is not None and pair[1] else None


def _is_clean(row: Row) -> bool:
    """A setting that differs from the baseline in its learn slots only."""
    setting = row.setting
    return not (setting.misleading or setting.review or setting.distractors)


def _verdict(what: str, value: float, target: float, *, below: bool = False, percent: bool = False) -> str:
    met = value <= target if below else value >= target
    shown = (lambda v: f"{v * 100:+.0f} points") if percent else (lambda v: f"{v:.2f}")
    bound = f"<= {target * 100:.0f} points" if percent else f"{'<=' if below else '>='} {target}"
    return f"{what}: {shown(value)} (target {bound}) {'PASS' if met else 'BELOW TARGET'}"


# -- the command ---------------------------------------------------------------------------------
def worker_environment(args: argparse.Namespace, redis_url: str, scale: Scale) -> dict[str, str]:
    """The ACE_* variables the fleet of this run reads, over those of the environment."""
    models = {f"ACE_{role}_MODEL": args.model for role in ("AGENT", "REFLECTOR", "SKILL_MANAGER")}
    env = {
        **os.environ,
        **models,
        "ACE_REDIS_URL": redis_url,
        "ACE_QUEUE_PREFIX": "benchlq",
        "ACE_SIM_LATENCY_SECONDS": str(args.latency),
        "ACE_SIM_PARAPHRASE": "false" if args.no_paraphrase else "true",
        "ACE_SIM_TRUST_THRESHOLD": str(args.trust_threshold),
        "ACE_MAX_SKILLBOOK_SKILLS": str(max(scale.distractors, default=0) + 10_000),
    }
    if args.skill_lookup is not None:
        # The SkillManager's lookup of similar skills (issue 42, item 1): a version of ace-workers
        # without that setting refuses the variable by name, which the caller reports in one line.
        env["ACE_SKILL_LOOKUP"] = args.skill_lookup
    return env


def build_settings(environ: Mapping[str, str]) -> WorkerSettings:
    """The workers' settings from ``environ``; SystemExit with the one line a bad setting gives."""
    try:
        settings = WorkerSettings.from_env(environ)
        check_models(settings)
    except SettingsError as exc:  # ModelUnavailableError (no key for the model) among them
        raise SystemExit(f"learning_quality: {exc}") from None
    return settings


def measure_all(
    settings: WorkerSettings,
    redis_url: str,
    family: TaskFamily,
    scale: Scale,
    *,
    seed: int = 7,
    timeout: float = 600.0,
    log: Callable[[str], None] = print,
    learn_at_scale: bool = False,
) -> list[Row]:
    """Every setting of ``scale`` on one fleet on ``redis_url``; the rows."""
    service = build_service(settings, redis_url=redis_url)
    try:
        run = Run(service, family, scale.epochs, seed, timeout, log, learn_at_scale)
        return [run_setting(run, setting, index) for index, setting in enumerate(settings_of(scale))]
    finally:
        service.close()


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The command line."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--small", action="store_true", help="the small setting: fewer tasks, 1,000 distractors"
    )
    parser.add_argument("--model", default="sim", help='"sim" (the simulator) or any litellm model')
    parser.add_argument("--tasks", default=SIM_FAMILY, help='"sim", a JSONL task file, or reasoning-gym:NAME')
    parser.add_argument(
        "--skill-lookup", choices=SKILL_LOOKUPS, default=None, help="ACE_SKILL_LOOKUP for the workers"
    )
    parser.add_argument("--epochs", type=int, default=None, help="epochs per setting (default: the scale's)")
    parser.add_argument("--train", type=int, default=None, help="training tasks (default: the scale's)")
    parser.add_argument(
        "--held-out", type=int, default=None, help="held-out tasks, and as many validation tasks"
    )
    parser.add_argument(
        "--topics", type=int, default=None, help="the simulator's topics (hidden rules), 1 to 8"
    )
    parser.add_argument("--latency", type=float, default=0.05, help="seconds per simulated LLM call")
    parser.add_argument(
        "--trust-threshold", type=int, default=3, help="votes before the simulated agent uses a skill"
    )
    parser.add_argument(
        "--no-paraphrase", action="store_true", help="the simulator states every rule one way"
    )
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--timeout", type=float, default=600.0, help="give up on an epoch after this")
    parser.add_argument(
        "--redis-url", default=None, help="database 14 of a shared Redis (default: a private one)"
    )
    parser.add_argument(
        "--learn-at-scale",
        action="store_true",
        help="distractor settings learn among their distractors (slow), not serve the baseline's skills",
    )
    parser.add_argument("--json", action="store_true", help="print the rows as JSON instead of the table")
    return parser.parse_args(argv)


def scale_of(args: argparse.Namespace) -> Scale:
    """The scale the options ask for."""
    base = SMALL if args.small else FULL
    return Scale(
        topics=args.topics or base.topics,
        train=args.train or base.train,
        held_out=args.held_out or base.held_out,
        epochs=args.epochs or base.epochs,
        distractors=base.distractors,
        slots=base.slots,
        misleading=base.misleading,
    )


def main(argv: Sequence[str] | None = None) -> None:
    """Measure every setting and print the table."""
    args = parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    scale = scale_of(args)
    family = load_family(
        args.tasks, train=scale.train, held_out=scale.held_out, topics=scale.topics, seed=args.seed
    )
    started = time.perf_counter()
    with bench_redis(args.redis_url) as url:
        settings = build_settings(worker_environment(args, url, scale))
        log = (lambda _: None) if args.json else (lambda line: print(line, file=sys.stderr, flush=True))
        rows = measure_all(
            settings,
            url,
            family,
            scale,
            seed=args.seed,
            timeout=args.timeout,
            log=log,
            learn_at_scale=args.learn_at_scale,
        )
    seconds = time.perf_counter() - started
    if args.json:
        print(json.dumps({"seconds": round(seconds, 1), "rows": [row.to_dict() for row in rows]}, indent=2))
        return
    lookup = args.skill_lookup or "the workers' default"
    paraphrase = "off" if args.no_paraphrase else "on"
    header = (
        f"model {args.model} (paraphrase {paraphrase}, {args.latency * 1000:.0f} ms/call), "
        f"tasks {family.name}: {len(family.train)} train, {len(family.held_out)} held-out; "
        f"skill lookup {lookup}; {scale.epochs} epochs; {seconds:.0f} s in all"
    )
    print_table(rows, header)


if __name__ == "__main__":
    main()

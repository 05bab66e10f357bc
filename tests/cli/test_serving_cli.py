"""``enqueue --skillbook NAME@LABEL --canary SHARE`` on real workers, and ``skillbook compare`` of what
they served: the counts from real runs with the simulated LLM, in text and --json."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from typer.testing import CliRunner

from ace_workers.cli import app
from ace_workers.core import Skillbook
from ace_workers.distributed.producer.producer import BatchHandle
from ace_workers.distributed.service import Service, build_service, local_workers
from ace_workers.distributed.settings import WorkerSettings
from ace_workers.sim import make_tasks
from tests.support.cli import said

PREFIX = "cliserve"


@pytest.fixture
def service(clean_env: pytest.MonkeyPatch, redis_client: redis.Redis, redis_url: str) -> Iterator[Service]:
    """Workers on the test Redis; "book" learned the tasks' rules at its head; prod there, canary at v1."""
    clean_env.setenv("ACE_REDIS_URL", redis_url)
    clean_env.setenv("ACE_QUEUE_PREFIX", PREFIX)
    clean_env.setenv("ACE_SIM_TRUST_THRESHOLD", "0")
    built = build_service(WorkerSettings.from_env(), redis_url=redis_url)
    try:
        with local_workers(built, learn_threads=2):
            book = Skillbook()
            book.add_skill("general", "Answer politely.")
            store = built.runtime.store("book")
            first = store.import_skillbook(book)
            learning = built.producer.enqueue_samples(make_tasks(15, seed=5, topics=5), "book", epochs=3)
            learning.wait(timeout=120)
            store.labels.set("prod", store.version(), actor="user:test")
            store.labels.set("canary", first, actor="user:test")
            yield built
    finally:
        built.close()


def samples_file(tmp_path: Path, n: int) -> Path:
    path = tmp_path / "samples.jsonl"
    lines = [json.dumps(dataclasses.asdict(sample)) for sample in make_tasks(n, seed=7, topics=5)]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_a_batch_enqueued_on_a_label_with_a_canary_is_compared_per_label(
    service: Service, tmp_path: Path
) -> None:
    runner = CliRunner()
    path = str(samples_file(tmp_path, 40))
    args = ["enqueue", path, "--recipe", "ace", "--skillbook", "book@prod", "--canary", "30%", "--json"]
    sent = runner.invoke(app, args)
    assert sent.exit_code == 0, sent.output
    batch = json.loads(sent.stdout)
    assert (batch["skillbook"], batch["served_by"]) == ("book", "book@prod")
    handle = BatchHandle(batch["batch_id"], service.runtime)
    assert handle.wait(timeout=120).done == 40
    served = [r.output.metadata["served_label"] for r in handle.results() if r.output is not None]
    canaries = served.count("canary")
    assert 0 < canaries < 40
    assert served.count("prod") == 40 - canaries

    compared = runner.invoke(app, ["skillbook", "compare", "book", "prod", "canary", "--json"])
    assert compared.exit_code == 0, compared.output
    report = json.loads(compared.stdout)
    prod, canary = report["labels"]
    assert (prod["label"], prod["served"], prod["success"], prod["failure"]) == (
        "prod",
        40 - canaries,
        40 - canaries,
        0,
    )
    assert (canary["label"], canary["served"], canary["success"], canary["failure"]) == (
        "canary",
        canaries,
        0,
        canaries,
    )
    assert prod["interval_95"][1] == 1.0
    assert canary["interval_95"][0] == 0.0
    assert (report["overlap"], report["better"]) == (False, "prod")

    text = runner.invoke(app, ["skillbook", "compare", "book", "prod", "canary"])
    assert text.exit_code == 0
    lines = text.stdout.splitlines()
    assert lines[0].startswith(
        f"prod: served {40 - canaries}, {40 - canaries} of {40 - canaries} judged succeeded: 100.0%"
    )
    assert lines[1].startswith(f"canary: served {canaries}, 0 of {canaries} judged succeeded: 0.0%")
    assert lines[2] == "prod is significantly better (the 95% intervals do not overlap)"
    # The learning batch was served by the head, which can be compared too.
    head = json.loads(runner.invoke(app, ["skillbook", "compare", "book", "head", "prod", "--json"]).stdout)
    assert head["labels"][0]["served"] == 45


def test_a_label_the_skillbook_lacks_or_a_bad_share_is_refused_naming_it(
    service: Service, tmp_path: Path
) -> None:
    runner = CliRunner()
    path = str(samples_file(tmp_path, 2))
    unknown = runner.invoke(app, ["enqueue", path, "--recipe", "ace", "--skillbook", "book@beta"])
    assert unknown.exit_code == 2
    assert "skillbook 'book' has no label 'beta' (its labels: canary, prod)" in said(unknown.output)
    share = runner.invoke(app, ["enqueue", path, "--recipe", "ace", "--skillbook", "book", "--canary", "ten"])
    assert share.exit_code == 2
    assert "canary share 'ten' is not a share" in said(share.output)
    traces = runner.invoke(app, ["enqueue", path, "--skillbook", "book@prod"])
    assert traces.exit_code == 2
    assert "recipe 'trace_analyser' runs no agent step" in said(traces.output)
    bad = runner.invoke(app, ["skillbook", "compare", "book", "prod", "pr od"])
    assert bad.exit_code == 2
    assert "invalid label 'pr od'" in said(bad.output)

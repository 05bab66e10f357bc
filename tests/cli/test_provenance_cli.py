"""``skillbook why``: a skill learned on real workers, with its trace, as text and as JSON."""

from __future__ import annotations

import json
from typing import Any

import pytest
import redis
from typer.testing import CliRunner

from ace_workers.cli import app
from ace_workers.sim import TOPICS, failure_traces
from tests.support.cli import said
from tests.support.workers import running_service


def _learned(redis_url: str, traces: list[dict[str, Any]]) -> tuple[str, str, dict[str, Any]]:
    """Learn ``traces`` into skillbook "book" on real workers: queue prefix, batch id, one skill's origin."""
    with running_service(redis_url) as service:
        handle = service.producer.enqueue_traces(traces, "book")
        assert handle.wait(timeout=60).done == len(traces)
        # A skill one sample taught: where a topic has two traces, whether the second one's lesson
        # came before or after the first was written (an ADD skipped, or a TAG) is timing.
        taught_once = [t.name for t in TOPICS if sum(f"{t.name} " in tr["question"] for tr in traces) == 1]
        skill = next(s for s in service.runtime.store("book").export().skills() if s.section in taught_once)
        return (
            service.runtime.settings.queue_prefix,
            handle.batch_id,
            {"id": skill.id, **skill.occurrences[0]},
        )


def test_why_shows_where_a_skill_came_from_with_its_trace(
    clean_env: pytest.MonkeyPatch, redis_client: redis.Redis, redis_url: str
) -> None:
    traces = [{**trace, "trace_id": f"t-{n}"} for n, trace in enumerate(failure_traces(6), 1)]
    prefix, batch_id, origin = _learned(redis_url, traces)
    clean_env.setenv("ACE_REDIS_URL", redis_url)
    clean_env.setenv("ACE_QUEUE_PREFIX", prefix)
    trace = traces[origin["sample_index"] - 1]
    runner = CliRunner()

    text = runner.invoke(app, ["skillbook", "why", "book", origin["id"]])
    assert text.exit_code == 0, text.output
    shown = said(text.output)
    assert f"skill {origin['id']} in skillbook 'book'" in shown
    assert "occurrences: 1 in all (ADD 1)" in shown
    assert f"ADD by skill_manager batch {batch_id} sample {origin['sample_index']}" in shown
    assert f"trace {trace['trace_id']} recipe trace_analyser" in shown
    assert f"insight: {origin['insight']}" in shown
    assert said(f"trace: {json.dumps(trace)}") in shown

    as_json = runner.invoke(app, ["skillbook", "why", "book", origin["id"], "--json"])
    assert as_json.exit_code == 0, as_json.output
    report = json.loads(as_json.output)
    assert (report["skill_id"], report["state"], report["total"]) == (origin["id"], "active", 1)
    [occurrence] = report["occurrences"]
    assert occurrence["batch_id"] == batch_id
    assert occurrence["evidence"] == {"status": "found", "trace": trace, "sample": None}
    assert [op["type"] for change in report["changes"] for op in change["operations"]] == ["ADD"]


def test_why_names_an_unknown_skill_or_skillbook(
    clean_env: pytest.MonkeyPatch, redis_client: redis.Redis, redis_url: str
) -> None:
    prefix, _, _ = _learned(redis_url, failure_traces(2))
    clean_env.setenv("ACE_REDIS_URL", redis_url)
    clean_env.setenv("ACE_QUEUE_PREFIX", prefix)
    runner = CliRunner()
    no_skill = runner.invoke(app, ["skillbook", "why", "book", "zorb-09999"])
    assert no_skill.exit_code == 2
    assert "skillbook 'book' has no skill 'zorb-09999'" in said(no_skill.output)
    no_book = runner.invoke(app, ["skillbook", "why", "nope", "zorb-00001"])
    assert no_book.exit_code == 2
    assert "no skillbook named 'nope' in Redis (known: book)" in said(no_book.output)

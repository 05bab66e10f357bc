"""One truth per sample: random interleavings of the ledger's writes, held against a model on real Redis.

Every sample of a batch is queued, running, waiting for budget, done, failed or cancelled; the counts add up
to the batch's size after every write, and no write counts a sample twice.
"""

from __future__ import annotations

import pytest
import redis
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule, run_state_machine_as_test

from ace_workers.distributed.store.batches import BatchState, BatchStore, sample_key
from ace_workers.distributed.store.budget_waits import WaitingSamples
from ace_workers.distributed.store.errors import BatchCancelledError

SAMPLES = 6
EPOCH = 1


class LedgerMachine(RuleBasedStateMachine):
    """The batch store under test beside a model of each sample's state."""

    def __init__(self, client: redis.Redis) -> None:
        super().__init__()
        client.flushdb()
        self.batches = BatchStore(client, prefix="acct", ttl_seconds=3600)
        self.waits = WaitingSamples(client, prefix="acct", ttl_seconds=3600)
        self.batches.create(
            "b", skillbook="book", recipe="trace_analyser", per_epoch=SAMPLES, epochs=1, skills_at_start=0
        )
        for index in range(1, SAMPLES + 1):
            self.batches.record_sent("b", EPOCH, index)
        self.state = dict.fromkeys(range(1, SAMPLES + 1), "queued")
        self.reopened: set[int] = set()
        self.ever_finished: set[int] = set()
        self.retried = 0
        self.cancelled = False

    samples = st.integers(min_value=1, max_value=SAMPLES)

    @rule(index=samples)
    def start(self, index: int) -> None:
        may_run = self.batches.record_progress("b", EPOCH, index, first_step=True)
        assert may_run is not self.cancelled
        if may_run and self.state[index] in ("queued", "waiting"):
            self.state[index] = "running"  # a waiting sample's released step started

    @rule(index=samples)
    def wait_for_budget(self, index: int) -> None:
        # A step of a running sample refused for its tenant's spent budget: the sample waits.
        if self.state[index] not in ("running", "waiting"):
            return
        if self.cancelled:
            with pytest.raises(BatchCancelledError):
                self.waits.mark("b", EPOCH, index, tenant="t", step=1)
            return
        assert self.waits.mark("b", EPOCH, index, tenant="t", step=1)
        self.state[index] = "waiting"

    @rule(index=samples, failed=st.booleans())
    def finish(self, index: int, failed: bool) -> None:
        if failed:
            answer = self.batches.record_failure("b", EPOCH, index, step="Step", error="boom")
        else:
            answer = self.batches.record_done("b", EPOCH, index, {"trace": {}})
        if self.state[index] in ("done", "failed"):
            assert answer is None  # a redelivery: counted already
            return
        assert answer is not None
        self.state[index] = "failed" if failed else "done"
        if index in self.reopened:
            self.reopened.discard(index)
            self.retried += not failed
        self.ever_finished.add(index)

    @rule(index=samples)
    def retry_dead_letter(self, index: int) -> None:
        if self.cancelled:
            with pytest.raises(BatchCancelledError):
                self.batches.reopen("b", EPOCH, index)
            return
        reopened = self.batches.reopen("b", EPOCH, index)
        assert reopened == (self.state[index] == "failed")
        if reopened:
            self.state[index] = "running"
            self.reopened.add(index)

    @rule(index=samples)
    def redrive(self, index: int) -> None:
        self.batches.record_redrive("b", EPOCH, index)  # a lost message sent again: no state changes

    @rule()
    def cancel(self) -> None:
        self.batches.cancel("b")
        self.cancelled = True

    @invariant()
    def counts_match_the_model_and_add_up(self) -> None:
        status = self.batches.status("b")
        counts = status.counts()
        model = {state: list(self.state.values()).count(state) for state in ("done", "failed")}
        unfinished = SAMPLES - model["done"] - model["failed"]
        expected = {
            **model,
            "running": 0 if self.cancelled else list(self.state.values()).count("running"),
            "queued": 0 if self.cancelled else list(self.state.values()).count("queued"),
            "waiting_for_budget": 0 if self.cancelled else list(self.state.values()).count("waiting"),
            "cancelled": unfinished if self.cancelled else 0,
            "retried": self.retried,
        }
        assert counts == expected
        states = ("done", "failed", "running", "queued", "waiting_for_budget", "cancelled")
        assert sum(counts[state] for state in states) == SAMPLES
        assert self.batches.finished_in_epoch("b", EPOCH) == len(self.ever_finished)  # each counted once

    @invariant()
    def the_batch_finishes_exactly_when_every_sample_finished_and_says_how(self) -> None:
        state = self.batches.status("b").state
        outcomes = list(self.state.values())
        if self.cancelled:
            assert state is BatchState.CANCELLED
        elif not all(s in ("done", "failed") for s in outcomes):
            assert state is BatchState.RUNNING
        elif "failed" not in outcomes:
            assert state is BatchState.DONE
        elif "done" not in outcomes:
            assert state is BatchState.FAILED  # every sample failed: never "done"
        else:
            assert state is BatchState.DONE_WITH_FAILURES

    @invariant()
    def a_retried_sample_says_so(self) -> None:
        records = self.batches.records("b")
        for index in self.ever_finished - self.reopened:
            record = records[sample_key(EPOCH, index)]
            assert record["outcome"] == self.state[index]


def test_random_interleavings_keep_one_truth_per_sample(redis_client: redis.Redis) -> None:
    run_state_machine_as_test(
        lambda: LedgerMachine(redis_client),
        settings=settings(
            max_examples=60,
            stateful_step_count=25,
            deadline=None,
            suppress_health_check=[HealthCheck.function_scoped_fixture],
        ),
    )


def test_a_sample_that_fails_before_its_first_step_starts_is_failed_not_queued(
    redis_client: redis.Redis,
) -> None:
    batches = BatchStore(redis_client, prefix="acct", ttl_seconds=3600)
    batches.create("b", skillbook="book", recipe="nosuch", per_epoch=3, epochs=1, skills_at_start=0)
    for index in range(1, 4):
        batches.record_sent("b", 1, index)
        # An unknown recipe fails the sample before its step could record progress.
        batches.record_failure("b", 1, index, step="step 0 of recipe 'nosuch'", error="UnknownRecipeError")
    status = batches.status("b")
    assert status.counts() == {
        "done": 0,
        "failed": 3,
        "running": 0,
        "queued": 0,
        "waiting_for_budget": 0,
        "cancelled": 0,
        "retried": 0,
    }
    assert status.state is BatchState.FAILED


def test_a_retried_sample_that_finishes_is_done_and_marked_retried(redis_client: redis.Redis) -> None:
    batches = BatchStore(redis_client, prefix="acct", ttl_seconds=3600)
    batches.create("b", skillbook="book", recipe="trace_analyser", per_epoch=2, epochs=1, skills_at_start=0)
    batches.record_done("b", 1, 1, {"trace": {}})
    batches.record_failure("b", 1, 2, step="ApplyStep", error="boom")
    assert batches.status("b").state is BatchState.DONE_WITH_FAILURES
    assert batches.reopen("b", 1, 2)
    assert batches.status("b").state is BatchState.RUNNING  # running again, its keys kept
    assert redis_client.ttl(batches._key("b")) == -1
    batches.record_done("b", 1, 2, {"trace": {"ok": [1, 2]}})
    status = batches.status("b")
    assert (status.done, status.failed, status.retried, status.state) == (2, 0, 1, BatchState.DONE)
    record = batches.records("b")["e1:2"]
    assert record == {"retried": True, "outcome": "done", "payload": {"trace": {"ok": [1, 2]}}}

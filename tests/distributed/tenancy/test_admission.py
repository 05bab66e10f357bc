"""The admission scheduler's scripts on real Redis (and Redis Cluster): window, weights, caps, healing."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

import pytest
import redis

from ace_workers.distributed.store.keys import admission_key
from ace_workers.distributed.tenancy import Tenant
from ace_workers.distributed.tenancy.admission_scheduler import AdmissionState, Grant
from tests.support.fixtures import server_or_cluster


@pytest.fixture(params=["server", "cluster"])
def redis_client(request: pytest.FixtureRequest) -> Iterator[redis.Redis]:
    """The scripts touch several keys: one hash tag makes them run on Redis Cluster as on one Redis."""
    yield from server_or_cluster(request)


@pytest.fixture
def state(redis_client: redis.Redis) -> AdmissionState:
    return AdmissionState(redis_client)


def granted(grants: list[Grant]) -> dict[str, int]:
    """Batch id -> admitted count, from one admit call's grants."""
    return {grant.batch_id: grant.admitted for grant in grants}


def test_the_window_bounds_what_is_in_flight_and_a_finish_frees_one_slot(state: AdmissionState) -> None:
    state.open("a1", tenant="a", limit=100, per_epoch=100)
    assert granted(state.admit(5, {})) == {"a1": 5}
    assert state.admit(5, {}) == []  # full
    assert state.in_flight() == {"a": 5}
    state.leave_flight("a1", epoch=1, finished=1)
    assert granted(state.admit(5, {})) == {"a1": 6}
    assert state.admitted("a1") == 6


def test_a_batch_is_admitted_no_further_than_its_limit_until_its_next_epoch_opens(
    state: AdmissionState,
) -> None:
    state.open("b", tenant="a", limit=3, per_epoch=3)
    assert granted(state.admit(10, {})) == {"b": 3}
    for finished in (1, 2, 3):
        state.leave_flight("b", epoch=1, finished=finished)
    assert state.admit(10, {}) == []  # epoch 2 not open yet
    assert state.open("b", tenant="a", limit=6, per_epoch=3) == 3
    assert granted(state.admit(10, {})) == {"b": 6}
    assert state.in_flight() == {"a": 3}
    # Epoch 2's finishes count from its own finished count: (2 - 1) x 3 + n.
    state.leave_flight("b", epoch=2, finished=2)
    assert state.in_flight() == {"a": 1}
    # A late opener of epoch 1 lowers nothing.
    state.open("b", tenant="a", limit=3, per_epoch=3)
    assert state.admit(10, {}) == []


def test_a_new_tenant_gets_the_next_free_slot_however_much_the_other_has_waiting(
    state: AdmissionState,
) -> None:
    state.open("big", tenant="a", limit=20_000, per_epoch=20_000)
    assert granted(state.admit(4, {})) == {"big": 4}
    state.open("small", tenant="b", limit=50, per_epoch=50)
    state.leave_flight("big", epoch=1, finished=1)
    assert granted(state.admit(4, {})) == {"small": 1}
    state.leave_flight("big", epoch=1, finished=2)
    assert granted(state.admit(4, {})) == {"small": 2}  # b: 1 in flight against a's 2
    state.leave_flight("big", epoch=1, finished=3)
    # Equal shares now (2 each): the next slot goes to the batch that came first.
    assert granted(state.admit(4, {})) == {"big": 5}


def test_backlogged_tenants_share_the_window_by_weight(state: AdmissionState) -> None:
    for tenant in ("a", "b", "c"):
        state.open(f"{tenant}1", tenant=tenant, limit=1000, per_epoch=1000)
    tenants = {"a": Tenant("a", weight=1), "b": Tenant("b", weight=2), "c": Tenant("c", weight=3)}
    state.admit(60, tenants)
    assert state.in_flight() == {"a": 10, "b": 20, "c": 30}
    # As samples finish in any order, each freed slot goes back to keep the shares.
    for batch, finished in (("c1", 6), ("c1", 12), ("a1", 3)):
        state.leave_flight(batch, epoch=1, finished=finished)
        state.admit(60, tenants)
    assert state.in_flight() == {"a": 10, "b": 20, "c": 30}


def test_a_tenant_never_exceeds_its_cap_and_its_share_goes_to_the_others(state: AdmissionState) -> None:
    state.open("a1", tenant="a", limit=1000, per_epoch=1000)
    state.open("b1", tenant="b", limit=1000, per_epoch=1000)
    tenants = {"a": Tenant("a", weight=100, max_in_flight=3)}
    assert granted(state.admit(10, tenants)) == {"a1": 3, "b1": 7}
    state.leave_flight("b1", epoch=1, finished=1)
    assert granted(state.admit(10, tenants)) == {"b1": 8}  # a at its cap despite its weight


def test_a_batch_cap_holds_its_samples_and_lets_the_tenants_next_batch_go(state: AdmissionState) -> None:
    state.open("first", tenant="a", limit=100, per_epoch=100, cap=2)
    state.open("second", tenant="a", limit=100, per_epoch=100)
    assert granted(state.admit(5, {})) == {"first": 2, "second": 3}
    state.open("first", tenant="a", limit=100, per_epoch=100)  # cap None: kept
    state.leave_flight("second", epoch=1, finished=1)
    assert granted(state.admit(5, {})) == {"second": 4}


def test_a_finish_told_twice_or_late_frees_its_slot_once(state: AdmissionState) -> None:
    state.open("a1", tenant="a", limit=100, per_epoch=100)
    state.admit(10, {})
    state.leave_flight("a1", epoch=1, finished=2)
    state.leave_flight("a1", epoch=1, finished=2)  # a redelivered final task
    state.leave_flight("a1", epoch=1, finished=1)  # a finish told after a later one
    assert state.in_flight() == {"a": 8}
    # Never told: the next finish (or the reconciler's count from the batch record) covers it.
    state.leave_flight("a1", epoch=1, finished=5)
    assert state.in_flight() == {"a": 5}


def test_parked_samples_hold_no_slot_until_released(state: AdmissionState) -> None:
    state.open("a1", tenant="a", limit=100, per_epoch=100)
    state.admit(4, {})
    assert state.leave_flight("a1", epoch=1, finished=None) == 3
    assert state.leave_flight("a1", epoch=1, finished=None) == 2
    assert granted(state.admit(4, {})) == {"a1": 6}
    assert state.reenter_flight("a1") == 5
    assert state.in_flight() == {"a": 5}  # above the window for a while: it was admitted before
    assert state.admit(4, {}) == []


def test_a_parked_sample_named_by_its_key_counts_once_however_often_it_is_told(state: AdmissionState) -> None:
    state.open("a*[1]", tenant="a", limit=100, per_epoch=100)  # glob characters in the id, too
    state.admit(4, {})
    assert state.leave_flight("a*[1]", epoch=1, finished=None, sample="e1:1") == 3
    assert state.leave_flight("a*[1]", epoch=1, finished=None, sample="e1:1") == 3  # a redelivery
    assert state.reenter_flight("a*[1]", sample="e1:2") == 3  # never parked: takes no slot
    assert state.reenter_flight("a*[1]", sample="e1:1") == 4
    assert state.reenter_flight("a*[1]", sample="e1:1") == 4
    state.leave_flight("a*[1]", epoch=1, finished=None, sample="e1:3")
    state.open("a*[2]", tenant="a", limit=1, per_epoch=1)
    state.leave_flight("a*[2]", epoch=1, finished=None, sample="e1:1")
    assert state.forget("a*[1]")
    # Its marks went with it; another batch's stayed.
    assert state.redis.hkeys(admission_key("parked_samples")) == [b"a*[2]\x1fe1:1"]


def test_forgetting_a_batch_frees_its_slots_and_its_grants_stop(state: AdmissionState) -> None:
    state.open("a1", tenant="a", limit=100, per_epoch=100)
    state.open("b1", tenant="b", limit=100, per_epoch=100)
    state.admit(6, {})
    assert state.forget("a1")
    assert not state.forget("a1")
    assert state.batches() == ["b1"]
    assert granted(state.admit(6, {})) == {"b1": 6}
    assert state.leave_flight("a1", epoch=1, finished=1) == -1  # a late finish of it changes nothing


def test_grants_are_recorded_before_anyone_sends_and_never_repeated(state: AdmissionState) -> None:
    state.open("a1", tenant="a", limit=10, per_epoch=10)
    state.admit(3, {})
    # Whoever sends reads the count (a sender that died after its grant is healed from it); asking
    # again grants nothing more while nothing left flight.
    assert state.admitted("a1") == 3
    assert state.admit(3, {}) == []
    assert state.admitted("a1") == 3


def test_nothing_is_granted_until_the_fewest_free_slots_asked_for_are_free(state: AdmissionState) -> None:
    state.open("a1", tenant="a", limit=100, per_epoch=100)
    assert granted(state.admit(8, {}, least=4)) == {"a1": 8}
    for finished in (1, 2, 3):
        state.leave_flight("a1", epoch=1, finished=finished)
        assert state.admit(8, {}, least=4) == []  # 1, 2, then 3 slots free: not yet a chunk
    assert granted(state.admit(8, {}, least=1)) == {"a1": 11}  # who asks for any slot gets them
    state.leave_flight("a1", epoch=1, finished=7)
    assert granted(state.admit(8, {}, least=4)) == {"a1": 15}  # four free: all four granted at once


def test_a_finish_frees_its_slot_and_grants_the_free_ones_in_one_call(state: AdmissionState) -> None:
    state.open("a1", tenant="a", limit=100, per_epoch=100)
    state.admit(4, {})
    state.open("b1", tenant="b", limit=100, per_epoch=100)
    left, grants, quiet = state.leave_and_admit("a1", epoch=1, finished=1, window=4, tenants={})
    assert (left, granted(grants)) == (3, {"b1": 1})  # the freed slot went to the tenant with none
    # Told twice (a redelivered final task), the finish frees nothing more.
    assert state.leave_and_admit("a1", epoch=1, finished=1, window=4, tenants={}) == (3, [], 0)
    left, grants, quiet = state.leave_and_admit("a1", epoch=1, finished=3, window=4, tenants={}, least=3)
    assert (left, grants) == (1, [])  # two free: fewer than asked for
    assert quiet == 0  # another tenant has work: every finish is told
    assert state.in_flight() == {"a": 1, "b": 1}
    # A batch admission does not know answers -1, and the free slots are granted all the same.
    left, grants, quiet = state.leave_and_admit("gone", epoch=1, finished=1, window=4, tenants={}, least=2)
    assert (left, granted(grants), quiet) == (-1, {"a1": 5, "b1": 2}, 0)


def test_grants_are_spread_over_many_calls_as_fairly_as_in_one(state: AdmissionState) -> None:
    for tenant in ("a", "b", "c"):
        state.open(f"{tenant}1", tenant=tenant, limit=1000, per_epoch=1000)
    seen: Counter[str] = Counter()
    for _ in range(30):
        for grant in state.admit(30, {}, most=1):
            seen[grant.batch_id] += 1
    assert seen == {"a1": 10, "b1": 10, "c1": 10}


def test_garbage_in_the_state_counts_as_zero_and_breaks_nothing(
    state: AdmissionState, redis_client: redis.Redis
) -> None:
    state.open("a1", tenant="a", limit=5, per_epoch=5)
    redis_client.hset(admission_key("left"), "a1", "not a number")
    redis_client.hset(admission_key("admitted"), "a1", "[]")
    assert granted(state.admit(10, {})) == {"a1": 5}
    assert state.in_flight() == {"a": 5}


def test_a_tenant_alone_is_told_how_far_its_finishes_may_go_untold(state: AdmissionState) -> None:
    state.open("a1", tenant="a", limit=100, per_epoch=100)
    state.admit(8, {})
    # One free of a chunk of 4: the next two finishes change no grant, the third frees the chunk.
    assert state.leave_and_admit("a1", epoch=1, finished=1, window=8, tenants={}, least=4) == (7, [], 3)
    left, grants, quiet = state.leave_and_admit("a1", epoch=1, finished=4, window=8, tenants={}, least=4)
    assert (left, granted(grants)) == (4, {"a1": 12})
    assert quiet == 4 + 3  # the window full again: three more may go untold
    # The mark is over all epochs: epoch 2 of a batch of 100 counts from 100.
    state.open("a2", tenant="a", limit=200, per_epoch=100)
    state.redis.hset(admission_key("admitted"), "a2", 104)
    state.redis.hset(admission_key("left"), "a2", 100)
    state.forget("a1")
    left, _, quiet = state.leave_and_admit("a2", epoch=2, finished=1, window=8, tenants={}, least=8)
    assert left == 3
    assert quiet == 101 + 2  # two more may go untold, counted from 101


def test_the_last_sample_a_batch_has_in_flight_is_always_told(state: AdmissionState) -> None:
    state.open("a1", tenant="a", limit=2, per_epoch=2)
    state.open("a2", tenant="a", limit=100, per_epoch=100)
    assert granted(state.admit(8, {})) == {"a1": 2, "a2": 6}
    # Half a window short of a chunk, but a1 has one sample left in flight: its finish is told.
    assert state.leave_and_admit("a1", epoch=1, finished=1, window=8, tenants={}, least=4) == (1, [], 0)


def test_no_finish_goes_untold_while_another_tenant_has_samples_in_flight(state: AdmissionState) -> None:
    state.open("a1", tenant="a", limit=100, per_epoch=100)
    state.open("b1", tenant="b", limit=1, per_epoch=1)
    assert granted(state.admit(8, {})) == {"a1": 7, "b1": 1}
    # b waits for nothing more, but its sample in flight may finish its epoch and open the next.
    assert state.leave_and_admit("a1", epoch=1, finished=1, window=8, tenants={}, least=4) == (6, [], 0)


def test_once_nothing_waits_every_finish_but_a_batchs_last_in_flight_may_go_untold(
    state: AdmissionState,
) -> None:
    state.open("a1", tenant="a", limit=6, per_epoch=6)
    assert granted(state.admit(8, {})) == {"a1": 6}
    # Nothing left to admit: no finish but the last one in flight (its epoch's end) changes anything.
    assert state.leave_and_admit("a1", epoch=1, finished=1, window=8, tenants={}, least=4) == (5, [], 1 + 4)
    assert state.take_quiet() == ["a1"]  # for whoever opens a batch next to end
    assert state.take_quiet() == []  # taken once
    state.leave_and_admit("a1", epoch=1, finished=2, window=8, tenants={}, least=4)
    assert state.forget("a1")
    assert state.take_quiet() == []  # a forgotten batch is no longer kept

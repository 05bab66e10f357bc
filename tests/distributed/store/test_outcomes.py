"""Live A/B counters and their comparison: Wilson intervals, overlap, the canary share's parsing."""

from __future__ import annotations

import pytest
import redis

from ace_workers.distributed.store.keys import SkillbookKeys
from ace_workers.distributed.store.outcomes import (
    FAILURE,
    SUCCESS,
    compare_labels,
    read_outcomes,
    record_outcome,
    wilson_interval,
)
from ace_workers.distributed.worker.serving import ServingPlan, canary_draw, parse_share, served_by

KEYS = SkillbookKeys("book", "abtest")


def test_the_wilson_interval_matches_the_textbook_figures() -> None:
    low, high = wilson_interval(8, 10)
    assert (round(low, 4), round(high, 4)) == (0.4902, 0.9433)
    assert wilson_interval(0, 10)[0] == 0.0
    assert wilson_interval(10, 10)[1] == 1.0
    assert wilson_interval(0, 0) == (0.0, 1.0)


def test_counters_add_up_per_label_and_head(redis_client: redis.Redis) -> None:
    for outcome in (SUCCESS, SUCCESS, FAILURE, None):
        record_outcome(redis_client, KEYS, "prod", outcome)
    record_outcome(redis_client, KEYS, None, FAILURE)
    outcomes = read_outcomes(redis_client, KEYS)
    assert sorted(outcomes) == ["head", "prod"]
    prod = outcomes["prod"]
    assert (prod.served, prod.success, prod.failure, prod.judged) == (4, 2, 1, 3)
    assert prod.success_rate == pytest.approx(2 / 3)
    assert (outcomes["head"].served, outcomes["head"].failure) == (1, 1)
    with pytest.raises(ValueError, match="an outcome is"):
        record_outcome(redis_client, KEYS, "prod", "maybe")


def test_overlapping_intervals_say_no_significant_difference(redis_client: redis.Redis) -> None:
    for _ in range(6):
        record_outcome(redis_client, KEYS, "prod", SUCCESS)
    for outcome in (SUCCESS, SUCCESS, SUCCESS, FAILURE):
        record_outcome(redis_client, KEYS, "canary", outcome)
    comparison = compare_labels(redis_client, KEYS, "prod", "canary")
    assert comparison.overlap
    assert comparison.better is None
    assert comparison.to_dict()["significant"] is False
    assert compare_labels(redis_client, KEYS, "prod", "beta").b.served == 0  # nothing served yet


def test_a_canary_share_reads_as_a_percentage_or_a_fraction() -> None:
    assert parse_share("10%") == pytest.approx(0.1)
    assert parse_share("0.25") == 0.25
    with pytest.raises(ValueError, match="'ten' is not a share"):
        parse_share("ten")
    with pytest.raises(ValueError, match="outside 0% to 100%"):
        parse_share("150%")


def test_the_canary_pick_is_a_fixed_function_of_batch_and_index() -> None:
    plan = ServingPlan("prod", 0.5)
    picks = [plan.label_for("batch-a", index) for index in range(1, 201)]
    assert picks == [plan.label_for("batch-a", index) for index in range(1, 201)]
    assert 60 < picks.count("canary") < 140
    assert [canary_draw("batch-a", i) for i in range(5)] != [canary_draw("batch-b", i) for i in range(5)]
    assert ServingPlan(None, 0.0).label_for("batch-a", 1) is None
    assert ServingPlan("prod", 0.1).labels() == ["prod", "canary"]
    with pytest.raises(ValueError, match="a canary share is a fraction"):
        ServingPlan("prod", 1.5)


def test_only_a_version_and_a_label_name_count_as_served() -> None:
    assert served_by({"served_version": 3, "served_label": "prod"}) == (3, "prod")
    assert served_by({"served_version": 3, "served_label": None}) == (3, None)
    assert served_by({"served_version": 3, "served_label": "x:served"}) is None
    assert served_by({"served_version": "3", "served_label": "prod"}) is None
    assert served_by({}) is None

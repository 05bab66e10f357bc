"""The steering operations on a real Redis: authorized once, the principal recorded as the actor."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import redis

from ace_workers.core import UpdateBatch, UpdateOperation
from ace_workers.distributed.settings import WorkerSettings
from ace_workers.distributed.store.errors import HeadMovedError, LabelMovedError, UnknownSkillbookError
from ace_workers.distributed.tenancy import Tenant
from ace_workers.distributed.tenancy.errors import ForeignSkillbookError, RoleTooLowError
from ace_workers.operations import FleetClient, Principal, open_fleet, operator, outcome_of
from ace_workers.operations.errors import ExpectRequiredError
from ace_workers.operations.expect import NOT_GIVEN
from ace_workers.operations.history import rollback
from ace_workers.operations.labels import delete_label, list_labels, set_label
from ace_workers.operations.lifecycle import pin_skills


@pytest.fixture
def fleet(redis_url: str, redis_client: redis.Redis) -> Iterator[FleetClient]:
    """Tenants alpha (owns "book", two versions) and beta (owns "other")."""
    with open_fleet(WorkerSettings(queue_prefix="steer"), redis_url) as fleet:
        fleet.tenants.add(Tenant("alpha", skillbooks=("book", "book-gone")))
        fleet.tenants.add(Tenant("beta", skillbooks=("other",)))
        for name in ("book", "other"):
            for content in ("Carry the one", "Check units"):
                fleet.store(name).apply(
                    UpdateBatch(operations=[UpdateOperation(type="ADD", section="math", content=content)])
                )
        yield fleet


def test_another_tenants_skillbook_is_refused_before_anything_is_read(fleet: FleetClient) -> None:
    key = Principal("key:k1", "alpha", "admin", "k1")
    with pytest.raises(ForeignSkillbookError):
        pin_skills(fleet, key, "other", ["math-00001"])
    assert fleet.store("other").version() == 2


def test_a_role_below_the_operations_is_refused_and_nothing_changes(fleet: FleetClient) -> None:
    with pytest.raises(RoleTooLowError, match="needs role 'admin'"):
        set_label(fleet, Principal("key:k2", "alpha", "review", "k2"), "book", "prod", 1, expect=None)
    assert fleet.store("book").labels.all() == {}


def test_a_missing_skillbook_names_only_those_the_principal_may_see(fleet: FleetClient) -> None:
    with pytest.raises(UnknownSkillbookError, match=r"\(known: book\)"):
        list_labels(fleet, Principal("key:k3", "alpha", "read", "k3"), "book-gone")


def test_a_pin_and_a_label_move_record_the_principal_as_the_actor(fleet: FleetClient) -> None:
    ann = operator("user:ann")
    result = pin_skills(fleet, ann, "book", ["math-00001"], note="core")
    assert result.changed == ["math-00001"]
    (entry,) = fleet.store("book").history(limit=1)
    assert entry.source is not None
    assert entry.source["actor"] == "user:ann"
    move = set_label(fleet, ann, "book", "prod", None, expect=None)
    assert (move.to_version, move.actor) == (result.version, "user:ann")


def test_a_move_or_rollback_against_a_stale_view_changes_nothing(fleet: FleetClient) -> None:
    ann = operator("user:ann")
    set_label(fleet, ann, "book", "prod", 1, expect=None)
    with pytest.raises(LabelMovedError):
        set_label(fleet, ann, "book", "prod", 2, expect=2)
    assert fleet.store("book").labels.all() == {"prod": 1}
    with pytest.raises(HeadMovedError):
        rollback(fleet, ann, "book", 1, expect=1)
    done = rollback(fleet, ann, "book", 1, expect=2, via="test")
    assert (done.changed, done.version) == (True, 3)
    (entry,) = fleet.store("book").history(limit=1)
    assert entry.source is not None
    assert (entry.source["actor"], entry.source["via"]) == ("user:ann", "test")


def test_a_move_a_delete_or_a_rollback_without_expect_is_refused_and_changes_nothing(
    fleet: FleetClient,
) -> None:
    ann = operator("user:ann")
    with pytest.raises(
        ExpectRequiredError, match="moving label 'prod' of skillbook 'book': expect is required"
    ):
        set_label(fleet, ann, "book", "prod", 1)
    assert fleet.store("book").labels.all() == {}
    set_label(fleet, ann, "book", "prod", 1, expect=None)
    with pytest.raises(ExpectRequiredError, match="deleting label 'prod'"):
        delete_label(fleet, ann, "book", "prod")
    assert fleet.store("book").labels.all() == {"prod": 1}
    for expect in (NOT_GIVEN, None):  # None would skip the head's check: a head is a version
        with pytest.raises(ExpectRequiredError, match="rolling back skillbook 'book'"):
            rollback(fleet, ann, "book", 1, expect=expect)
    assert fleet.store("book").version() == 2
    assert outcome_of(ExpectRequiredError("x")).http_status == 400

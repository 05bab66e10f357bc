"""Every domain error is an AceError, keeps the built-in base callers catch, and carries its context."""

from __future__ import annotations

import importlib
import uuid
from collections.abc import Iterator

import pytest
import redis

from ace_workers.core import Skillbook, UpdateBatch, UpdateOperation
from ace_workers.distributed import (
    BatchExistsError,
    BatchInputMissingError,
    BatchNotFoundError,
    ChangelogTrimmedError,
    ImportPathError,
    InvalidKeyPrefixError,
    InvalidSkillbookNameError,
    RecipeNotCallableError,
    RedisSkillbookStore,
    SnapshotCache,
    StepAborted,
    StoreError,
    UnknownStepError,
    VersionRangeError,
    WorkerError,
)
from ace_workers.distributed.producer.errors import ProducerError
from ace_workers.distributed.service import Service, build_service
from ace_workers.distributed.settings import WorkerSettings
from ace_workers.distributed.store.batches import BatchStore
from ace_workers.distributed.store.changelog import require_contiguous
from ace_workers.distributed.store.keys import validate_key_prefix, validate_skillbook_name
from ace_workers.distributed.worker.chains import sample_chain
from ace_workers.distributed.worker.recipes import import_object, resolve_recipe
from ace_workers.errors import AceError, SkillbookError, UnknownTagError
from ace_workers.sim import failure_traces

# Each module that holds a layer's errors; every exception it exports must be an AceError.
ERROR_MODULES = [
    "ace_workers.errors",
    "ace_workers.distributed.errors",
    "ace_workers.distributed.store.errors",
    "ace_workers.distributed.worker.errors",
    "ace_workers.distributed.producer.errors",
    "ace_workers.distributed.ops.errors",
    "ace_workers.mcp.errors",
]

# The domain errors that were bare built-in exceptions, with their sub-base and the built-in
# exception existing callers catch (None where callers caught nothing narrower than Exception).
DOMAIN_ERRORS = [
    (InvalidSkillbookNameError, StoreError, ValueError),
    (InvalidKeyPrefixError, StoreError, ValueError),
    (VersionRangeError, StoreError, ValueError),
    (ChangelogTrimmedError, StoreError, ValueError),
    (BatchNotFoundError, StoreError, LookupError),
    (BatchInputMissingError, StoreError, LookupError),
    (ImportPathError, WorkerError, ValueError),
    (RecipeNotCallableError, ImportPathError, ValueError),
    (UnknownStepError, WorkerError, ValueError),
    (StepAborted, WorkerError, None),
    (BatchExistsError, ProducerError, ValueError),
    (UnknownTagError, SkillbookError, ValueError),
]


def _exported_exceptions() -> Iterator[tuple[str, type[BaseException]]]:
    for module_name in ERROR_MODULES:
        module = importlib.import_module(module_name)
        for name in module.__all__:
            value = getattr(module, name)
            if isinstance(value, type) and issubclass(value, BaseException):
                yield f"{module_name}.{name}", value


@pytest.mark.parametrize(("where", "cls"), list(_exported_exceptions()), ids=lambda v: str(v).rsplit(".")[-1])
def test_every_exported_error_is_an_ace_error(where: str, cls: type[BaseException]) -> None:
    assert issubclass(cls, AceError), where


@pytest.mark.parametrize(
    ("cls", "sub_base", "builtin"), DOMAIN_ERRORS, ids=lambda v: getattr(v, "__name__", "")
)
def test_a_domain_error_sits_under_its_layer_and_keeps_its_builtin_base(
    cls: type[AceError], sub_base: type[AceError], builtin: type[Exception] | None
) -> None:
    assert issubclass(cls, sub_base)
    assert issubclass(cls, AceError)
    if builtin is not None:
        assert issubclass(cls, builtin)


@pytest.mark.parametrize(
    ("cls", "sub_base", "builtin"), DOMAIN_ERRORS, ids=lambda v: getattr(v, "__name__", "")
)
def test_a_domain_error_has_a_one_line_docstring(
    cls: type[AceError], sub_base: type[AceError], builtin: type[Exception] | None
) -> None:
    doc = cls.__doc__ or ""
    assert doc.strip()
    assert "\n" not in doc.strip()


# -- raised by real operations, with their context -------------------------------------------


@pytest.mark.parametrize("name", ["a b", "a}:b", "", "-leading"])
def test_a_bad_skillbook_name_raises_invalid_skillbook_name_error(name: str) -> None:
    with pytest.raises(InvalidSkillbookNameError, match="invalid skillbook name") as raised:
        validate_skillbook_name(name)
    assert raised.value.name == name


def test_a_bad_key_prefix_raises_invalid_key_prefix_error() -> None:
    with pytest.raises(InvalidKeyPrefixError, match="invalid key prefix") as raised:
        validate_key_prefix("a b")
    assert raised.value.prefix == "a b"


def test_a_trimmed_change_log_raises_changelog_trimmed_error_naming_the_versions() -> None:
    with pytest.raises(ChangelogTrimmedError, match="no longer reaches back to version 1") as raised:
        require_contiguous("book", [], 1, 7)
    assert (raised.value.name, raised.value.first, raised.value.last, raised.value.oldest) == (
        "book",
        1,
        7,
        None,
    )


def test_an_import_path_without_a_colon_raises_import_path_error() -> None:
    with pytest.raises(ImportPathError, match="not an import path") as raised:
        import_object("no_colon_here")
    assert raised.value.path == "no_colon_here"


def test_an_import_path_that_does_not_import_raises_import_path_error() -> None:
    with pytest.raises(ImportPathError, match="cannot import") as raised:
        import_object("ace_workers_no_such_module:thing")
    assert raised.value.path == "ace_workers_no_such_module:thing"
    assert isinstance(raised.value.__cause__, ImportError)


def test_a_recipe_that_is_not_callable_raises_recipe_not_callable_error() -> None:
    path = "ace_workers.distributed.recipe_registry:BUILT_IN_RECIPES"
    with pytest.raises(RecipeNotCallableError, match="is not callable") as raised:
        resolve_recipe("mine", {"mine": path})
    assert (raised.value.name, raised.value.path) == ("mine", path)


def test_an_unknown_tag_raises_unknown_tag_error_and_changes_nothing() -> None:
    book = Skillbook()
    skill = book.add_skill("math", "Check the units")
    with pytest.raises(UnknownTagError, match="tag must be one of") as raised:
        book.tag_skill(skill.id, "brilliant")
    assert (raised.value.skill_id, raised.value.tag) == (skill.id, "brilliant")
    assert "helpful" in raised.value.known
    unchanged = book.get_skill(skill.id)
    assert unchanged is not None
    assert unchanged.helpful == 0


def test_an_unknown_batch_raises_batch_not_found_error_carrying_its_id(redis_client: redis.Redis) -> None:
    batches = BatchStore(redis_client, prefix="tde", ttl_seconds=3600)
    with pytest.raises(BatchNotFoundError, match="no batch 'nosuch'") as raised:
        batches.status("nosuch")
    assert (raised.value.batch_id, raised.value.ttl_seconds) == ("nosuch", 3600)


def test_a_missing_input_raises_batch_input_missing_error(redis_client: redis.Redis) -> None:
    batches = BatchStore(redis_client, prefix="tde", ttl_seconds=3600)
    with pytest.raises(BatchInputMissingError, match="stores no input for sample 3") as raised:
        batches.item("b1", 3)
    assert (raised.value.batch_id, raised.value.index) == ("b1", 3)


def _add(content: str) -> UpdateBatch:
    return UpdateBatch(operations=[UpdateOperation(type="ADD", section="math", content=content)])


def test_versions_beyond_the_current_one_raise_version_range_error(redis_client: redis.Redis) -> None:
    store = RedisSkillbookStore(redis_client, "book", snapshot_cache=SnapshotCache())
    store.apply(_add("Check the units"))
    store.apply(_add("Estimate first"))
    with pytest.raises(VersionRangeError, match="the current version") as raised:
        store.diff(0, 5)
    assert (raised.value.name, raised.value.current, raised.value.requested) == ("book", 2, (0, 5))
    with pytest.raises(VersionRangeError, match="cannot roll back to version 9") as rolled:
        store.rollback(9)
    assert (rolled.value.current, rolled.value.requested) == (2, (9,))
    assert store.version() == 2


@pytest.fixture
def service(redis_client: redis.Redis, redis_url: str) -> Iterator[Service]:
    settings = WorkerSettings(redis_url=redis_url, queue_prefix=f"t{uuid.uuid4().hex[:8]}")
    built = build_service(settings, redis_url=redis_url)
    try:
        yield built
    finally:
        built.close()


def test_resuming_an_unknown_batch_raises_batch_not_found_error(service: Service) -> None:
    with pytest.raises(BatchNotFoundError) as raised:
        service.producer.resume("never-sent")
    assert raised.value.batch_id == "never-sent"


def test_sending_under_a_taken_batch_id_raises_batch_exists_error(service: Service) -> None:
    service.producer.enqueue_traces(failure_traces(2), "book", batch_id="taken")
    with pytest.raises(BatchExistsError, match="exists already") as raised:
        service.producer.enqueue_traces(failure_traces(2), "book", batch_id="taken")
    assert raised.value.batch_id == "taken"
    assert service.runtime.batches.status("taken").enqueued == 2  # nothing was sent twice


def test_a_step_the_recipe_does_not_have_raises_unknown_step_error(service: Service) -> None:
    with pytest.raises(UnknownStepError, match="no step 99") as raised:
        sample_chain(
            service.dispatcher,
            {},
            recipe="trace_analyser",
            skillbook="book",
            batch_id="b1",
            epoch=1,
            sample_index=1,
            start=99,
        )
    assert (raised.value.recipe, raised.value.index) == ("trace_analyser", 99)
    assert raised.value.steps >= 1

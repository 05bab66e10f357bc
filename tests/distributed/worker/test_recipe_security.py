"""Workers run only what they are configured to run: messages name recipes, they never import them.

Attacks are published the way someone with access to the broker would: straight onto a
queue with ``send_task``, or as a crafted letter on the dead-letter list. Real Redis, real
in-process workers.
"""

from __future__ import annotations

import inspect
import sys
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
import redis

from ace_workers.distributed.errors import InvalidSettingError
from ace_workers.distributed.producer.producer import BatchHandle
from ace_workers.distributed.recipe_registry import BUILT_IN_RECIPES
from ace_workers.distributed.service import Service
from ace_workers.distributed.settings import WorkerSettings
from ace_workers.distributed.store.keys import dead_letters_key
from ace_workers.distributed.worker import recipes as worker_recipes
from ace_workers.distributed.worker.dead_letters import read_dead_letters, retry_dead_letters
from ace_workers.distributed.worker.errors import UnknownRecipeError
from ace_workers.distributed.worker.recipes import resolve_recipe
from ace_workers.sim import failure_traces
from tests.support.crafted import create_one_sample_batch, park_letter, publish_step, trace_payload
from tests.support.workers import running_service

HOSTILE_MODULE = "tests.support.hostile_recipe"
HOSTILE = f"{HOSTILE_MODULE}:run"


@pytest.fixture
def service(redis_client: redis.Redis, redis_url: str) -> Iterator[Service]:
    sys.modules.pop(HOSTILE_MODULE, None)
    with running_service(redis_url, learn_threads=2) as built:
        yield built
    assert HOSTILE_MODULE not in sys.modules, "a recipe named by a message was imported"


def publish_crafted_step(service: Service, recipe: Any, *, batch_id: str) -> None:
    """Publish an ace.step message naming ``recipe``, for a one-sample batch made for it."""
    publish_step(service, trace_payload(service), recipe=recipe, batch_id=batch_id)


def dead_letters(service: Service) -> list[dict[str, Any]]:
    return [letter.letter or {} for letter in read_dead_letters(service.runtime)]


def test_a_message_naming_an_import_path_fails_its_sample_and_imports_nothing(service: Service) -> None:
    batch_id = uuid.uuid4().hex
    publish_crafted_step(service, HOSTILE, batch_id=batch_id)
    handle = BatchHandle(batch_id, service.runtime)
    status = handle.wait(timeout=30)
    assert (status.done, status.failed) == (0, 1)
    assert f"unknown recipe {HOSTILE!r}" in handle.errors()[0]["error"]
    assert HOSTILE_MODULE not in sys.modules


def test_a_message_naming_an_import_path_is_dead_lettered_with_its_error(service: Service) -> None:
    batch_id = uuid.uuid4().hex
    publish_crafted_step(service, "builtins:print", batch_id=batch_id)
    BatchHandle(batch_id, service.runtime).wait(timeout=30)
    (letter,) = dead_letters(service)
    assert letter["error"].startswith("UnknownRecipeError: unknown recipe 'builtins:print'")


def test_a_worker_keeps_serving_after_a_crafted_message(service: Service) -> None:
    publish_crafted_step(service, "sys:exit", batch_id=uuid.uuid4().hex)
    status = service.producer.enqueue_traces(failure_traces(3), "after").wait(timeout=60)
    assert (status.done, status.failed) == (3, 0)


def test_a_message_whose_recipe_is_not_a_string_is_refused_too(service: Service) -> None:
    batch_id = uuid.uuid4().hex
    publish_crafted_step(service, {"not": "a name"}, batch_id=batch_id)
    status = BatchHandle(batch_id, service.runtime).wait(timeout=30)
    assert status.failed == 1


def test_a_step_that_raises_system_exit_fails_its_sample_once_and_is_dead_lettered(service: Service) -> None:
    handle = service.producer.enqueue_traces(failure_traces(2), "exits", recipe="system_exit")
    status = handle.wait(timeout=60)
    assert (status.done, status.failed) == (0, 2)
    assert [letter["step"] for letter in dead_letters(service)] == ["ExitProcess", "ExitProcess"]
    assert "SystemExit: a step asked the process to exit" in handle.errors()[0]["error"]


def test_the_worker_keeps_serving_after_a_step_raised_system_exit(service: Service) -> None:
    service.producer.enqueue_traces(failure_traces(1), "exits", recipe="system_exit").wait(timeout=60)
    status = service.producer.enqueue_traces(failure_traces(3), "after").wait(timeout=60)
    assert (status.done, status.failed) == (3, 0)


def test_the_producer_refuses_an_unconfigured_recipe_before_sending(service: Service) -> None:
    with pytest.raises(UnknownRecipeError, match="ACE_RECIPES"):
        service.producer.enqueue_traces(failure_traces(2), "book", recipe=HOSTILE)
    assert service.runtime.redis.keys("*batch*") == []


def test_a_configured_recipe_runs_by_its_name(service: Service) -> None:
    handle = service.producer.enqueue_traces(failure_traces(2), "broken", recipe="failing")
    status = handle.wait(timeout=60)
    assert status.failed == 2
    assert "boom on purpose" in handle.errors()[0]["error"]


def park(service: Service, recipe: str, *, batch_id: str = "parked") -> None:
    """A dead letter as the step task writes one, naming ``recipe``, of a batch that exists."""
    if not service.runtime.batches.exists(batch_id):
        create_one_sample_batch(service, batch_id)
    park_letter(
        service.runtime.redis, service.runtime.settings.queue_prefix, recipe=recipe, batch_id=batch_id
    )


def test_retrying_dead_letters_never_imports_a_letters_recipe_and_keeps_that_letter(service: Service) -> None:
    park(service, HOSTILE)
    park(service, "trace_analyser")
    report = retry_dead_letters(service.dispatcher)
    assert report.sent == 1
    assert [letter.letter["kwargs"]["recipe"] for letter, _ in report.kept if letter.letter] == [HOSTILE]
    assert [letter["kwargs"]["recipe"] for letter in dead_letters(service)] == [HOSTILE]


def test_an_unreadable_dead_letter_is_kept_and_named(service: Service) -> None:
    key = dead_letters_key(service.runtime.settings.queue_prefix)
    service.runtime.redis.rpush(key, b"{not json")
    report = retry_dead_letters(service.dispatcher)
    assert report.sent == 0
    assert report.kept[0][1].startswith("not JSON")
    assert service.runtime.redis.llen(key) == 1


MINE = "tests.support.recipes:failing_recipe"
OTHER = "tests.support.recipes:flaky_recipe"


def test_ace_recipes_maps_names_to_import_paths() -> None:
    settings = WorkerSettings.from_env({"ACE_RECIPES": f"mine={MINE}, other={OTHER}"})
    assert settings.recipe_paths() == {"mine": MINE, "other": OTHER}


@pytest.mark.parametrize(
    ("path", "problem"),
    [
        (
            "tests.support.recipes:failing_recipe.__call__",
            "recipe 'mine': 'failing_recipe.__call__' is a dotted attribute",
        ),
        ("tests.support.no_such_module:make", "module 'tests.support.no_such_module' cannot be imported"),
        ("tests.support.recipes:no_such_recipe", "module 'tests.support.recipes' has no 'no_such_recipe'"),
        ("tests.support.recipes:TEST_RECIPES", "is a str, not a function"),
    ],
)
def test_an_ace_recipes_target_that_cannot_be_imported_fails_when_the_settings_are_built(
    path: str, problem: str
) -> None:
    with pytest.raises(InvalidSettingError, match="ACE_RECIPES") as raised:
        WorkerSettings.from_env({"ACE_RECIPES": f"mine={path}"})
    assert problem in str(raised.value)


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("pkg.mod:make", "is not 'name=package.module:function'"),
        ("mine=not a path", "is not 'name=package.module:function'"),
        ("ace=pkg.mod:make", "recipe name 'ace' is taken"),
        (f"a={MINE},a={OTHER}", "recipe name 'a' is taken"),
    ],
)
def test_a_malformed_ace_recipes_fails_at_start_naming_the_variable(value: str, problem: str) -> None:
    with pytest.raises(InvalidSettingError, match="ACE_RECIPES") as raised:
        WorkerSettings.from_env({"ACE_RECIPES": value})
    assert problem in str(raised.value)


@pytest.mark.parametrize("name", list(BUILT_IN_RECIPES))
def test_every_built_in_recipe_of_the_registry_resolves_to_its_function(name: str) -> None:
    recipe = resolve_recipe(name, {})
    assert recipe is getattr(worker_recipes, f"{name}_recipe")


def test_every_recipe_function_of_the_worker_is_in_the_registry() -> None:
    # A recipe is a public function of the module taking RecipeInputs (annotations are strings here).
    functions = {
        name
        for name, value in vars(worker_recipes).items()
        if inspect.isfunction(value)
        and value.__module__ == worker_recipes.__name__
        and not name.startswith("_")
        and [p.annotation for p in inspect.signature(value).parameters.values()] == ["RecipeInputs"]
    }
    assert functions == {f"{name}_recipe" for name in BUILT_IN_RECIPES}


@pytest.mark.parametrize("name", list(BUILT_IN_RECIPES))
def test_ace_recipes_cannot_take_a_built_in_name(name: str) -> None:
    with pytest.raises(InvalidSettingError, match=f"recipe name '{name}' is taken"):
        WorkerSettings.from_env({"ACE_RECIPES": f"{name}=pkg.mod:make"})

"""A fleet whose settings disagree says so before it loses work.

A recipe's step list depends on settings (ACE_DEDUP_PROVIDER adds a DeduplicateStep,
ACE_REFLECTOR swaps the Reflector, ACE_RECIPES names recipes of your own), and a chain's
step index means the same step everywhere only if the producer and every worker agree on
them. Two guards, one for each side of a message:

- Every running worker publishes its shaping settings to Redis (``fleet:workers``, by
  node name, refreshed every :data:`REFRESH_SECONDS`, removed when it stops). A producer
  compares its own before sending and refuses, naming the setting and both values.
- Every message carries its recipe's *shape*, a digest of the steps and their queues as
  the sender built them (the sender also stores what made it, under ``fleet:shape:DIGEST``).
  A worker whose own shape differs fails the sample at once with the same kind of line,
  read from that record, instead of running a step that means something else here.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import time
from collections.abc import Mapping, Sequence
from typing import Any

import redis

from ..llms import ROLE_MODELS
from ..settings import WorkerSettings, env_name
from ..store.keys import fleet_workers_key, recipe_shape_key
from ..store.worker_records import FRESH_SECONDS, REFRESH_SECONDS, loaded_record, read_worker_records
from .errors import FleetSettingsMismatch, RecipeShapeMismatch
from .runtime import Route, WorkerRuntime

__all__ = [
    "FRESH_SECONDS",
    "REFRESH_SECONDS",
    "check_fleet_agrees",
    "announce_worker",
    "check_message_shape",
    "withdraw_worker",
    "recipe_shape",
    "worker_models",
    "shaping_settings",
    "worker_records",
]

logger = logging.getLogger(__name__)

# The WorkerSettings fields that change which steps a recipe has (ACE_RECIPES, which says whether
# a worker has a recipe of your own at all, is compared for the recipe a batch uses only).
SHAPING_FIELDS = ("dedup_provider", "reflector", "write_partitions")
# What route_digest gives: a message's shape names a record only if it has this form.
_DIGEST = re.compile(r"[0-9a-f]{16}")
# At most this much of a value read from another process's record is shown.
_SHOWN_CHARS = 200
# How long the record of a shape a sender used is kept: as long as a message may wait.
SHAPE_RECORD_SECONDS = 7 * 24 * 3600


def shaping_settings(settings: WorkerSettings) -> dict[str, str]:
    """The settings that shape recipes, by environment variable name."""
    return {env_name(field): str(getattr(settings, field)) for field in SHAPING_FIELDS}


def route_digest(recipe: str, routes: Sequence[Route]) -> str:
    """A short digest of a recipe's steps and the queue role of each."""
    steps = [recipe, *(f"{route.name}@{route.queue_role}" for route in routes)]
    return hashlib.sha256(json.dumps(steps).encode()).hexdigest()[:16]


def recipe_shape(runtime: WorkerRuntime, recipe: str, routes: Sequence[Route]) -> str:
    """The digest of ``recipe``'s shape (its ``routes`` here); its record is stored for the workers."""
    digest = route_digest(recipe, routes)
    if runtime.note_shape_published(digest):  # once per process and shape
        record = {
            "recipe": recipe,
            "steps": [route.name for route in routes],
            "settings": shaping_settings(runtime.settings),
        }
        runtime.redis.set(
            recipe_shape_key(runtime.settings.queue_prefix, digest),
            json.dumps(record),
            ex=SHAPE_RECORD_SECONDS,
        )
    return digest


def check_message_shape(
    runtime: WorkerRuntime, recipe: str, routes: Sequence[Route], shape: Any, node: str
) -> None:
    """RecipeShapeMismatch if a message was sent for another shape of ``recipe`` than ``routes``, its
    steps on this worker.

    A message with no shape (from an older sender, or crafted) is not checked here.
    """
    if shape is None:
        return
    mine = route_digest(recipe, routes)
    if shape == mine:
        return
    steps_here = [route.name for route in routes]
    if not (isinstance(shape, str) and _DIGEST.fullmatch(shape)):
        # A message is untrusted: only a digest names a key, and nothing else is read.
        raise RecipeShapeMismatch(
            recipe, f"the message's recipe shape is not a digest; worker {node} runs {steps_here}"
        )
    sender = loaded_record(runtime.redis.get(recipe_shape_key(runtime.settings.queue_prefix, shape)))
    difference = _first_difference(
        shaping_settings(runtime.settings),
        sender.get("settings"),
        here=f"in this worker ({node})",
        there=" where the sample was sent",
    )
    if difference is None:
        sent = sender.get("steps")
        difference = (
            f"recipe {recipe!r} has the steps {sent} where the sample was sent and {steps_here} on "
            f"worker {node}"
            if isinstance(sent, list)
            else f"the sample was sent for another shape of recipe {recipe!r} ({shape!r}) than worker "
            f"{node} runs ({steps_here})"
        )
    raise RecipeShapeMismatch(recipe, difference)


def check_fleet_agrees(
    runtime: WorkerRuntime, recipe: str | None = None, *, now: float | None = None
) -> None:
    """FleetSettingsMismatch if a running worker has other shaping settings than this process,
    or (``recipe`` given) runs that recipe from another import path, or not at all.

    Records older than :data:`FRESH_SECONDS` belong to workers gone and are left out.
    """
    mine = shaping_settings(runtime.settings)
    own_path = runtime.settings.recipe_paths().get(recipe) if recipe is not None else None
    now = time.time() if now is None else now
    for node, record in worker_records(runtime).items():
        at = record.get("at")
        if not isinstance(at, (int, float)) or now - at > FRESH_SECONDS:
            continue
        difference = _first_difference(mine, record.get("settings"), here="in this process", there="")
        if difference is None and own_path is not None:
            difference = _recipe_difference(recipe, own_path, record.get("recipes"))
        if difference is not None:
            raise FleetSettingsMismatch(node, difference)


def worker_records(runtime: WorkerRuntime) -> dict[str, dict[str, Any]]:
    """Each worker's published record (settings, recipes, queues, ``at``), by node name, stale ones too."""
    return read_worker_records(runtime.redis, runtime.settings.queue_prefix)


def publish_worker(runtime: WorkerRuntime, node: str, queues: Sequence[str] = ()) -> None:
    """Record this worker's shaping settings, recipes of your own, models and the queues it consumes
    under its node name, with the time (``status`` reads who serves a queue from it; ``learn --model``
    which models the fleet runs, producer/fleet_models.py)."""
    record = {
        "settings": shaping_settings(runtime.settings),
        "recipes": runtime.settings.recipe_paths(),
        "models": worker_models(runtime.settings),
        "queues": sorted(queues),
        "at": time.time(),
    }
    runtime.redis.hset(fleet_workers_key(runtime.settings.queue_prefix), node, json.dumps(record))


def worker_models(settings: WorkerSettings) -> dict[str, str]:
    """The model of each role in ``settings``, by environment variable name (ACE_REFLECTOR_MODEL: ...)."""
    fields = dict.fromkeys(field for fields in ROLE_MODELS.values() for field in fields)
    return {env_name(field): str(getattr(settings, field)) for field in fields}


def forget_worker(runtime: WorkerRuntime, node: str) -> None:
    """Remove a stopping worker's record."""
    runtime.redis.hdel(fleet_workers_key(runtime.settings.queue_prefix), node)


def _first_difference(mine: Mapping[str, str], theirs: Any, *, here: str, there: str) -> str | None:
    """ "ACE_X is 'a' {here} but 'b'{there}": the first shaping setting that differs, or None."""
    if not isinstance(theirs, dict):
        return None
    for name, value in mine.items():
        other = theirs.get(name)
        if other is not None and str(other) != value:
            # Read from Redis, written by whoever can write there: shown cut, as a repr.
            return f"{name} is {value!r} {here} but {str(other)[:_SHOWN_CHARS]!r}{there}"
    return None


def _recipe_difference(recipe: str | None, own_path: str, theirs: Any) -> str | None:
    """How a worker's ACE_RECIPES differs from this process's for ``recipe``, or None."""
    if not isinstance(theirs, dict):
        return None
    name = env_name("recipes")
    other = theirs.get(recipe)
    if other is None:
        return f"{name} names recipe {recipe!r} ({own_path}) in this process but not"
    if other != own_path:
        return f"{name} maps recipe {recipe!r} to {own_path!r} in this process but to {other!r}"
    return None


def announce_worker(runtime: WorkerRuntime, node: str, queues: Sequence[str] = ()) -> None:
    """Publish this worker's record (at start and every REFRESH_SECONDS); a Redis error only warns."""
    try:
        publish_worker(runtime, node, queues)
    except redis.RedisError as exc:  # a Redis hiccup must not stop the worker; the next round retries
        logger.warning("could not publish this worker's settings to the fleet record: %s", exc)


def withdraw_worker(runtime: WorkerRuntime, node: str) -> None:
    """Remove a stopping worker's record; a Redis error only warns (the record goes stale by itself)."""
    try:
        forget_worker(runtime, node)
    except redis.RedisError as exc:
        logger.warning("could not remove this worker's fleet record: %s", exc)

"""Reading a skillbook the way an agent outside the fleet is served it: ``support@prod``, or the head.

An agent of your own (``ACELiteLLM``, a runner, a LangChain app) reads the version a
label points at while the fleet keeps learning into the head::

    served = load_served_skillbook("support@prod")        # ACE_REDIS_URL, ACE_QUEUE_PREFIX
    agent = ACELiteLLM.from_model("sim", skillbook=served.skillbook())
    trace = {..., **served.trace_fields()}                # the trace says what served it

A name without a label reads ACE_SERVE_LABEL's label when that is set, else the head.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..core.context import SkillbookView
from ..core.skillbook import Skillbook
from ..errors import MissingSettingError
from .connections import client_url_for, store_client
from .settings import WorkerSettings, env_name
from .store.label_names import parse_skillbook_ref
from .store.store import RedisSkillbookStore
from .worker.serving import SERVED_LABEL, SERVED_VERSION

__all__ = ["ServedSkillbook", "load_served_skillbook", "read_served"]


@dataclass(frozen=True)
class ServedSkillbook:
    """The version of a skillbook a reader serves: which one, by which label (None: the head), read-only."""

    name: str
    label: str | None
    version: int
    view: SkillbookView

    def skillbook(self) -> Skillbook:
        """A copy to hand to an agent or runner (learning into it changes nothing in Redis)."""
        return Skillbook.from_dict(self.view.to_dict())

    def trace_fields(self) -> dict[str, Any]:
        """``served_version`` and ``served_label``, for the trace of a run this version served."""
        return {SERVED_VERSION: self.version, SERVED_LABEL: self.label}


def read_served(store: RedisSkillbookStore, label: str | None) -> ServedSkillbook:
    """What a reader of ``label`` (None: the head) of ``store`` is served; UnknownLabelError if absent."""
    version, view = store.snapshot_of(label)
    return ServedSkillbook(store.name, label, version, view)


def load_served_skillbook(ref: str, settings: WorkerSettings | None = None) -> ServedSkillbook:
    """Read ``NAME`` or ``NAME@LABEL`` from the store the settings (default: the environment) name.

    Raises:
        MissingSettingError: neither ACE_STORE_URL nor ACE_REDIS_URL names the store.
        InvalidSkillbookNameError, InvalidLabelError: ``ref`` cannot name a skillbook or label.
        UnknownLabelError: the skillbook has no such label (the message names those it has).
    """
    settings = settings or WorkerSettings.from_env()
    parsed = parse_skillbook_ref(ref)
    url = settings.store_url or settings.redis_url
    if url is None:
        raise MissingSettingError(
            env_name("redis_url"), f"reading skillbook {ref!r} needs the Redis it lives in"
        )
    client = store_client(client_url_for(url))
    try:
        store = RedisSkillbookStore(client, parsed.name, prefix=settings.queue_prefix)
        return read_served(store, parsed.label or settings.serve_label)
    finally:
        client.close()

"""The bare-Celery ceiling's worker app: plain tasks, the project's Celery settings, no ace-workers step code.

Started by ``learning_throughput.py`` as ``celery -A bare_chain_app worker ...``
(with this folder on PYTHONPATH), configured from the same ``ACE_*`` variables
as the ace-workers worker processes it is compared with.
"""

from __future__ import annotations

import time
from typing import Any

from ace_workers.distributed.settings import WorkerSettings
from ace_workers.distributed.worker.app import create_app

__all__ = ["BARE_LAST", "BARE_LLM", "BARE_NOOP"]  # and `app`, made on first access

BARE_LLM, BARE_NOOP, BARE_LAST = "bench.llm", "bench.noop", "bench.noop_last"


def _create_app() -> Any:
    """The app with the three plain tasks, configured from the ``ACE_*`` variables."""
    settings = WorkerSettings.from_env()
    app = create_app(settings)

    def llm(payload: Any) -> Any:
        time.sleep(settings.sim_latency_seconds)  # one simulated LLM call
        return payload

    def noop(payload: Any) -> Any:
        return payload

    app.task(name=BARE_LLM, ignore_result=True)(llm)
    app.task(name=BARE_NOOP, ignore_result=True)(noop)
    # The last task of a chain stores its result: how the benchmark sees that a chain finished.
    app.task(name=BARE_LAST)(noop)
    return app


def __getattr__(name: str) -> Any:
    # `celery -A bare_chain_app` asks for `app`; the benchmark itself only imports the task names,
    # so the environment is read only in the worker processes.
    if name == "app":
        globals()["app"] = _create_app()
        return globals()["app"]
    raise AttributeError(name)

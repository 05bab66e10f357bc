"""Deferred imports of litellm and instructor.

Both are slow to import (litellm takes seconds), and only the processes that
actually call a model need them, so nothing here runs until the first call.
"""

from __future__ import annotations

import functools
import importlib
import logging
import os
import sys
import threading
from collections.abc import Callable
from types import ModuleType

__all__ = [
    "LITELLM_LOGGERS",
    "import_instructor",
    "import_litellm",
    "quiet_litellm_logs",
    "when_litellm_loads",
]

# litellm's loggers (litellm/_logging.py), each given a stderr handler of litellm's own at import.
LITELLM_LOGGERS = ("LiteLLM", "LiteLLM Router", "LiteLLM Proxy")
# What runs once litellm is imported (when_litellm_loads), each exactly once.
_on_litellm_load: list[Callable[[ModuleType], object]] = []
_on_litellm_load_lock = threading.Lock()


@functools.cache
def import_litellm() -> ModuleType:
    """Return the litellm module, importing it on first use."""
    # Without this, `import litellm` downloads its model cost map from GitHub and,
    # on a machine with no or slow network, stalls until that request times out.
    # The copy bundled with litellm is enough to price completions; a caller who
    # wants the live map sets the variable to "False" before the first call.
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    litellm = importlib.import_module("litellm")
    # litellm prints banners on stdout ("Give Feedback / Get Help" on every mapped error,
    # "Provider List" on an unknown model): stdout belongs to the caller's own output, and
    # the error raised says all they say.
    litellm.suppress_debug_info = True  # type: ignore[attr-defined]
    quiet_litellm_logs()
    with _on_litellm_load_lock:
        waiting = list(_on_litellm_load)
        _on_litellm_load.clear()
    for callback in waiting:
        callback(litellm)
    return litellm


def quiet_litellm_logs() -> None:
    """litellm's loggers at WARNING, through the application's handlers only; LITELLM_LOG set: left as set.

    litellm logs two lines at INFO for every call ("LiteLLM completion() model= ...") and writes
    each record twice, once with a stderr handler of its own and once through the root logger's:
    a worker whose provider is down logged four lines per attempt of every sample.
    """
    if os.environ.get("LITELLM_LOG"):
        return  # litellm's own switch for its debug output: the user asked for it
    for name in LITELLM_LOGGERS:
        litellm_logger = logging.getLogger(name)
        litellm_logger.setLevel(logging.WARNING)
        for handler in list(litellm_logger.handlers):
            litellm_logger.removeHandler(handler)


def when_litellm_loads(callback: Callable[[ModuleType], object]) -> None:
    """Call ``callback(litellm)`` now if litellm is loaded, else when :func:`import_litellm` first loads it.

    For set-up that only matters to LiteLLM calls (a callback on ``litellm.callbacks``): a
    process whose model is not a LiteLLM one never pays the seconds litellm takes to import.
    """
    with _on_litellm_load_lock:
        # Not import_litellm's cache: once anyone has imported litellm, its calls may start now.
        if "litellm" not in sys.modules:
            _on_litellm_load.append(callback)
            return
    callback(import_litellm())


# instructor logs two ERROR lines for every call that fails ("API call failed on attempt 1",
# "Max retries exceeded"), then raises; InstructorClient turns that into the error its caller
# gets, which says the same. At ERROR they would print once per failed sample.
INSTRUCTOR_RETRY_LOGGER = "instructor.v2.retry"


def demote_to_debug(record: logging.LogRecord) -> bool:
    """A logging filter that makes the record a DEBUG one, and drops it unless its logger logs DEBUG."""
    record.levelno, record.levelname = logging.DEBUG, "DEBUG"
    # Handlers compare their own level only, which is usually NOTSET: the logger's decides.
    return logging.getLogger(record.name).isEnabledFor(logging.DEBUG)


@functools.cache
def import_instructor() -> ModuleType:
    """Return the instructor module, importing it (and litellm first) on first use."""
    import_litellm()  # so the cost-map variable is set whoever imports litellm first
    instructor = importlib.import_module("instructor")
    importlib.import_module("instructor.core")  # its exceptions; `instructor` does not load it eagerly
    logging.getLogger(INSTRUCTOR_RETRY_LOGGER).addFilter(demote_to_debug)
    return instructor

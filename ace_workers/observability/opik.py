"""Opik tracing: the settings and client every Opik step shares, and the LiteLLM callback.

Two independent ways to trace, both opt-in. Pipeline steps
(:class:`~ace_workers.steps.OpikStep`, :class:`~ace_workers.rr.opik.RROpikStep`)
log one Opik trace per sample from the step context; they get their client
from :func:`connect_opik`. :func:`register_opik_litellm_callback` instead puts
LiteLLM's ``OpikLogger`` on ``litellm.callbacks`` so every LLM call is logged
with its tokens and cost.

``opik`` is an optional extra, imported only when tracing is set up, never
when ``ace_workers`` is imported. Used directly, tracing degrades to a no-op
(and says why, once) when the package is missing or ``OPIK_DISABLED`` is set;
``strict=True``, which ``ACELiteLLM(opik=True)`` uses, raises instead.
"""

from __future__ import annotations

import logging
import os
import threading
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..env import environment, is_true
from ..errors import MissingExtraError, TracingSetupError

if TYPE_CHECKING:
    from litellm.integrations.opik.opik import OpikLogger
    from opik import Opik

__all__ = [
    "OPIK_EXTRA",
    "OpikSettings",
    "OpikLogging",
    "connect_opik",
    "register_opik_litellm_callback",
]

logger = logging.getLogger(__name__)

# The name of the ace-workers extra that installs the Opik SDK.
OPIK_EXTRA = "opik"

# Each reason tracing is off is logged once per process, not once per step or sample.
_logged_reasons: set[str] = set()
_logged_lock = threading.Lock()
# register_opik_litellm_callback checks and appends under it, so two threads register one logger.
_register_lock = threading.Lock()


@dataclass(frozen=True)
class OpikSettings:
    """Where Opik traces go, from the ``OPIK_*`` environment variables.

    Passed to the client explicitly, so tracing does not depend on a global
    ``~/.opik.config`` file; a value left unset falls back to the SDK's own
    configuration. ``OPIK_DISABLED`` (true/1/yes/on) switches all tracing off.
    """

    url_override: str | None = None
    workspace: str | None = None
    api_key: str | None = field(default=None, repr=False)  # a secret: kept out of logs
    disabled: bool = False

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> OpikSettings:
        """Read ``OPIK_URL_OVERRIDE``, ``OPIK_WORKSPACE``, ``OPIK_API_KEY`` and ``OPIK_DISABLED``."""
        env = environment(environ)
        return cls(
            url_override=env.get("OPIK_URL_OVERRIDE") or None,
            workspace=env.get("OPIK_WORKSPACE") or None,
            api_key=env.get("OPIK_API_KEY") or None,
            disabled=is_true(env.get("OPIK_DISABLED")),
        )


def connect_opik(
    project_name: str,
    *,
    owner: str,
    strict: bool = False,
    client: Opik | None = None,
    settings: OpikSettings | None = None,
) -> Opik | None:
    """The Opik client ``owner`` should log to, or None when tracing is off.

    ``OPIK_DISABLED`` wins over everything, a given ``client`` included: it is
    the switch that turns tracing off without touching code. Otherwise a
    given ``client`` is used as it is; else one is made for ``project_name``
    from ``settings`` (default: read from the environment now).

    Raises:
        MissingExtraError: ``strict`` and the ``opik`` package is not installed
            (an ImportError naming the extra to install).
        TracingSetupError: ``strict`` and the client could not be created (a RuntimeError).
    """
    settings = settings if settings is not None else OpikSettings.from_env()
    if not _tracing_possible(owner, strict=strict, settings=settings):
        return None
    if client is not None:
        return client
    import opik

    try:
        made = opik.Opik(
            project_name=project_name,
            workspace=settings.workspace,
            host=settings.url_override,
            api_key=settings.api_key,
        )
    except Exception as exc:  # the SDK validates its config with pydantic and may raise anything
        if strict:
            raise TracingSetupError("opik", f"{type(exc).__name__}: {exc}") from exc
        _log_once(
            "client",
            logging.WARNING,
            "Opik tracing is off: the Opik client could not be created (%s logs nothing): %s",
            owner,
            exc,
        )
        return None
    if strict:
        # A client the SDK knows cannot log (Comet cloud without an API key) would drop
        # every trace in the background: strict means saying so now.
        misconfigured, reason = made.config.get_misconfiguration_detection_results()
        if misconfigured:
            made.end(flush=False)
            raise TracingSetupError("opik", (reason or "misconfigured").strip())
    return made


class OpikLogging:
    """What the Opik steps share: the project, tags and client (None: tracing off), flush, repr."""

    default_project = "ace-framework"

    def __init__(
        self,
        project_name: str | None = None,
        tags: Sequence[str] | None = None,
        client: Opik | None = None,
        *,
        strict: bool = False,
    ) -> None:
        project_name = project_name or self.default_project
        self.project_name = project_name
        self.tags = list(tags or [])
        self._client = connect_opik(project_name, owner=type(self).__name__, strict=strict, client=client)

    @property
    def enabled(self) -> bool:
        """True if traces are sent (opik is installed, not disabled, and a client exists)."""
        return self._client is not None

    def flush(self, timeout: int | None = None) -> bool:
        """Send every buffered trace now; False if some were not sent within ``timeout`` seconds."""
        return True if self._client is None else self._client.flush(timeout)

    def __repr__(self) -> str:
        state = "" if self.enabled else ", disabled"
        return f"{type(self).__name__}(project_name={self.project_name!r}{state})"


def register_opik_litellm_callback(project_name: str = "ace-framework", *, strict: bool = False) -> bool:
    """Log every LiteLLM call (messages, tokens, cost) to Opik; True if a logger is registered.

    Puts LiteLLM's own ``OpikLogger`` on ``litellm.callbacks``, once: a second
    call finds it there and adds nothing. The logger sends through the Opik
    SDK's global client, which reads the same ``OPIK_*`` environment. Off
    (False) under ``OPIK_DISABLED`` or, unless ``strict``, without the opik
    package. Independent of the pipeline steps, which log one trace per sample.

    Raises:
        MissingExtraError: ``strict`` and the ``opik`` package is not installed (an ImportError).
    """
    if not _tracing_possible("the LiteLLM callback", strict=strict, settings=OpikSettings.from_env()):
        return False
    # Without it, importing litellm fetches the model cost map from the network.
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm
    from litellm.integrations.opik.opik import OpikLogger

    with _register_lock:
        registered = [cb for cb in litellm.callbacks if isinstance(cb, OpikLogger)]
        if registered:
            if registered[0].opik_project_name != project_name:
                logger.info(
                    "an Opik LiteLLM callback for project %r is registered already; not adding one for %r",
                    registered[0].opik_project_name,
                    project_name,
                )
            return True
        litellm.callbacks.append(_make_opik_logger(OpikLogger, project_name))
    logger.info("Opik LiteLLM callback registered for project %r", project_name)
    return True


def _tracing_possible(owner: str, *, strict: bool, settings: OpikSettings) -> bool:
    """False (saying why, once) when tracing is switched off or, unless ``strict``, opik is missing."""
    if settings.disabled:
        _log_once(
            "disabled", logging.INFO, "Opik tracing is off: OPIK_DISABLED is set (%s logs nothing)", owner
        )
        return False
    try:
        import opik  # noqa: F401  (imported here, on first use, never with ace_workers)
    except ImportError as exc:
        if strict:
            raise MissingExtraError("Opik tracing", OPIK_EXTRA, "opik") from exc
        _log_once(
            "missing",
            logging.WARNING,
            "Opik tracing is off: the opik package is not installed (%s logs nothing); "
            "install it with: pip install 'ace-workers[%s]'",
            owner,
            OPIK_EXTRA,
        )
        return False
    return True


def _make_opik_logger(opik_logger: type[OpikLogger], project_name: str) -> OpikLogger:
    """Build LiteLLM's OpikLogger without the noise its constructor makes outside an event loop.

    Outside a running loop the constructor's ``asyncio.create_task`` fails: it
    logs the traceback at ERROR and leaves an un-awaited coroutine (a
    RuntimeWarning). Neither matters: with the opik package installed the
    logger sends through the SDK client, not through that periodic flush.
    """
    noise = _DropRecords("Asynchronous processing not initialized")
    litellm_logger = logging.getLogger("LiteLLM")
    litellm_logger.addFilter(noise)
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings(
                "ignore", message=r"coroutine '.*periodic_flush' was never awaited", category=RuntimeWarning
            )
            return opik_logger(project_name=project_name)
    finally:
        litellm_logger.removeFilter(noise)


class _DropRecords(logging.Filter):
    """Drop the log records whose message template contains ``text``."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.text = text

    def filter(self, record: logging.LogRecord) -> bool:
        return self.text not in str(record.msg)


def _log_once(reason: str, level: int, message: str, *args: object) -> None:
    """Log why tracing is off at ``level`` the first time, at DEBUG after that."""
    with _logged_lock:
        first = reason not in _logged_reasons
        _logged_reasons.add(reason)
    logger.log(level if first else logging.DEBUG, message, *args)

"""How a console URL becomes a page, a JSON answer and an action: the pieces every area shares.

Each view is one function that returns a JSON-able dict. ``page`` serves it twice:
as JSON under ``/api/...`` and as HTML at the same path without ``/api``, the
template rendering exactly that dict, so a page shows nothing its API does not.
``action`` serves a state change as a POST at both paths: the read-only mode and
the CSRF token are checked, the audit log gets a line, and a browser is sent
back to a page while a script gets JSON.

Who may see what: a principal with an API key sees its tenant's skillbooks only.
:meth:`View.store` checks every skillbook a URL names with the scope check MCP uses
(``authorize``): another tenant's skillbook answers 404, as if it did not exist, and a
role below what the request needs (read for pages, the ``role`` each action declares)
answers 403. Lists keep what :meth:`View.can_see` allows.
"""

from __future__ import annotations

import hmac
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any
from urllib.parse import urlencode

import redis
from jinja2 import Environment
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import BaseRoute, Route

from ..core.json_nesting import loads_bounded
from ..distributed.service import Service
from ..distributed.store.keys import validate_skillbook_name
from ..distributed.store.store import RedisSkillbookStore, list_skillbooks
from ..distributed.tenancy.api_keys import authorize, can_see, role_at_least
from ..distributed.tenancy.errors import ForeignSkillbookError, RoleTooLowError
from ..distributed.tenancy.tenants import TenantMap
from ..operations import FleetClient
from ..operations import Principal as Caller
from ..operations.outcomes import OUTCOMES, outcome_of
from .access import Principal
from .audit import record_action
from .errors import BadRequestError, ConsoleRequestError, ForbiddenError, NotFoundError
from .notices import NOTICES, notice_text
from .security import csrf_token

__all__ = [
    "ActionResult",
    "AuditItem",
    "ConsoleState",
    "REFUSALS",
    "View",
    "action",
    "page",
    "error_response",
]

logger = logging.getLogger(__name__)

CSRF_FIELD = "csrf_token"
CSRF_HEADER = "x-csrf-token"


@dataclass
class ConsoleState:
    """What every request reads: the fleet's service, the templates, the mode and the CSRF secret."""

    service: Service
    templates: Environment
    secret: bytes
    read_only: bool = False

    @property
    def redis(self) -> redis.Redis:
        return self.service.runtime.redis

    @property
    def prefix(self) -> str:
        return self.service.runtime.settings.queue_prefix

    @cached_property
    def fleet(self) -> FleetClient:
        """The fleet as the operations read and write it, over the service's Redis connection."""
        return FleetClient.sharing(self.redis, self.service.runtime.settings)


@dataclass
class View:
    """One request as a view sees it: path and query parameters, the fleet, who asks."""

    request: Request
    state: ConsoleState
    principal: Principal
    params: dict[str, str] = field(default_factory=dict)
    # The role this request needs on the skillbooks it names: read for a page; an action's own.
    role: str = "read"

    @property
    def service(self) -> Service:
        return self.state.service

    @property
    def actor(self) -> str:
        """The actor the change log records for this user's changes (``key:ID`` for an API key)."""
        if self.principal.key_id:
            return f"key:{self.principal.key_id}"
        return f"user:{self.principal.name}"

    @property
    def acting(self) -> Caller:
        """Who asks, as the operations authorize and record them (the change log's actor: :attr:`actor`)."""
        principal = self.principal
        return Caller(self.actor, principal.tenant, principal.role, principal.key_id)

    @property
    def fleet_wide(self) -> bool:
        """True for a fleet operator (a ``*`` key, --no-auth)."""
        return self.principal.scope.fleet_wide

    def tenants(self) -> TenantMap:
        """Who owns which skillbook (the service's cached view, at most a few seconds old)."""
        return self.service.runtime.tenants.current()

    def can_see(self, skillbook: object) -> bool:
        """True when this principal may see ``skillbook`` (lists keep only these)."""
        if self.fleet_wide:
            return True
        return isinstance(skillbook, str) and can_see(self.principal.scope, skillbook, self.tenants())

    def authorize(self, skillbook: str, role: str | None = None) -> None:
        """404 for another tenant's skillbook (its existence is not revealed), 403 for a role too low."""
        try:
            authorize(self.principal.scope, role or self.role, skillbook, self.tenants())
        except ForeignSkillbookError:
            raise NotFoundError(_no_skillbook(skillbook)) from None
        except RoleTooLowError as exc:
            raise ForbiddenError(str(exc)) from None

    def path(self, name: str) -> str:
        return str(self.request.path_params[name])

    def query(self, name: str, default: str = "") -> str:
        return self.params.get(name, self.request.query_params.get(name, default))

    def int_query(self, name: str, default: int, *, minimum: int = 0, maximum: int | None = None) -> int:
        """An integer parameter; BadRequestError naming it when it is not one or out of range."""
        raw = self.query(name, "")
        if raw == "":
            return default
        try:
            value = int(raw)
        except ValueError:
            raise BadRequestError(f"{name}={raw!r}: expected a whole number") from None
        if value < minimum or (maximum is not None and value > maximum):
            upper = f" and at most {maximum}" if maximum is not None else ""
            raise BadRequestError(f"{name}={value}: must be at least {minimum}{upper}")
        return value

    def store(self, name: str | None = None) -> RedisSkillbookStore:
        """The skillbook the URL names (``{name}`` by default); NotFoundError if Redis has none such."""
        name = self.path("name") if name is None else name
        try:
            validate_skillbook_name(name)
        except ValueError as exc:
            raise BadRequestError(str(exc)) from None
        self.authorize(name)  # before looking: the same 404 whether another tenant's one exists or not
        store = self.service.runtime.store(name)
        if not store.exists() and name not in list_skillbooks(self.state.redis, self.state.prefix):
            raise NotFoundError(_no_skillbook(name))
        return store


def _no_skillbook(name: str) -> str:
    return f"no skillbook {name!r} in this fleet's Redis"


@dataclass(frozen=True)
class AuditItem:
    """One part of an action the audit log records on its own line (each proposal of a bulk decision)."""

    action: str
    target: str
    outcome: str
    details: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ActionResult:
    """What an action did: a sentence for scripts (the API's ``message``), the page to go back to,
    data for scripts, the code of the notice that page shows a person (one of NOTICES), and the
    parts the audit log records one by one (besides the action's own line)."""

    message: str
    redirect: str
    data: dict[str, Any] = field(default_factory=dict)
    audited: list[AuditItem] = field(default_factory=list)
    notice: str = field(kw_only=True)

    def __post_init__(self) -> None:
        if self.notice not in NOTICES:
            raise ValueError(f"notice {self.notice!r} is not one of console/notices.py's codes")


ViewFunction = Callable[[View], dict[str, Any]]
ActionFunction = Callable[[View], ActionResult]


def page(path: str, template: str, view: ViewFunction, *, name: str, summary: str) -> list[BaseRoute]:
    """``GET /api{path}`` answers ``view`` as JSON; ``GET {path}`` renders it with ``template``."""

    async def as_json(request: Request) -> Response:
        context = _view(request)
        return JSONResponse(await run_in_threadpool(view, context))

    async def as_html(request: Request) -> Response:
        context = _view(request)
        data = await run_in_threadpool(view, context)
        return render(context, template, data, api_path=_api_url(request))

    as_json.__doc__ = as_html.__doc__ = summary
    return [
        Route(f"/api{path}", as_json, methods=["GET"], name=f"api:{name}"),
        Route(path, as_html, methods=["GET"], name=name),
    ]


def action(
    path: str, do: ActionFunction, *, name: str, summary: str, target: str, role: str | None
) -> list[BaseRoute]:
    """``POST {path}`` (a form; answered by a redirect) and ``POST /api{path}`` (JSON in and out).

    ``target`` is a format string over the path parameters naming what the
    action changes, for the audit log (``"{name}"``, ``"{name}/{proposal}"``).
    ``role`` is what the action needs (review, admin): a principal below it gets 403, and
    :meth:`View.store` checks it on the skillbook the action names. ``None``: the action calls an
    operation, which authorizes the principal itself (:mod:`ace_workers.operations`).
    """

    async def run(request: Request) -> Response:
        context = _view(request)
        is_api = request.url.path.startswith("/api/")
        state = context.state
        if state.read_only:
            raise ForbiddenError("the console runs --read-only: it changes nothing")
        skillbook = request.path_params.get("name")
        if role is not None:  # None: the operation the action calls authorizes, once
            context.role = role
            if isinstance(skillbook, str):
                # A foreign skillbook is 404 before the role is looked at; View.store checks it again.
                await run_in_threadpool(context.authorize, skillbook)
            elif not role_at_least(context.principal.role, role):
                who = context.principal
                raise ForbiddenError(f"{who.name} has role {who.role!r}: {name} needs role {role!r}")
        context.params = await _body(request, is_api)
        if context.principal.ambient:
            _check_csrf(context, request)
        what = target.format(**request.path_params)
        try:
            result = await run_in_threadpool(do, context)
        except Exception as exc:
            await run_in_threadpool(_audit, context, name, what, f"refused: {exc}")
            raise
        await run_in_threadpool(_audit, context, name, what, "ok", result.data)
        for item in result.audited:
            await run_in_threadpool(_audit, context, item.action, item.target, item.outcome, item.details)
        if is_api:
            return JSONResponse({"ok": True, "message": result.message, **result.data})
        separator = "&" if "?" in result.redirect else "?"
        # The code only: the page looks its text up, so a link cannot put words in the console's mouth.
        return RedirectResponse(f"{result.redirect}{separator}{urlencode({'notice': result.notice})}", 303)

    run.__doc__ = summary
    return [
        Route(f"/api{path}", run, methods=["POST"], name=f"api:{name}"),
        Route(path, run, methods=["POST"], name=name),
    ]


def render(
    view: View, template: str, data: dict[str, Any], *, api_path: str = "", status: int = 200
) -> Response:
    """``template`` with ``data`` and what every page shows (user, mode, CSRF token, notice)."""
    state = view.state
    html = state.templates.get_template(template).render(
        data=data,
        user=view.principal.name,
        read_only=state.read_only,
        csrf_token=csrf_token(state.secret, view.principal),
        notice=notice_text(view.request.query_params.get("notice", "")),
        api_path=api_path,
        request_path=view.request.url.path,
        query=dict(view.request.query_params),
    )
    return HTMLResponse(html, status_code=status)


def error_response(request: Request, exc: Exception) -> Response:
    """A refused or failed request as JSON (under /api/) or as the error page, with the status
    :func:`~ace_workers.operations.outcome_of` gives its class (a bug, no row: 500, logged)."""
    if isinstance(exc, ForeignSkillbookError):  # an operation's refusal: hidden as View.authorize hides it
        exc = NotFoundError(_no_skillbook(exc.skillbook))
    status, kind = _status_of(exc)
    message = exc.message if isinstance(exc, ConsoleRequestError) else str(exc)
    if status >= 500:
        logger.exception("console: %s %s failed", request.method, request.url.path, exc_info=exc)
        message = f"internal error: {type(exc).__name__}: {exc}"
    if request.url.path.startswith("/api/") or "principal" not in request.scope.get("state", {}):
        return JSONResponse({"error": kind, "message": message}, status_code=status)
    return render(
        _view(request), "error.html", {"status": status, "kind": kind, "message": message}, status=status
    )


# What error_response answers as the operations' table says (any other error is a bug: 500).
REFUSALS: tuple[type[BaseException], ...] = (ConsoleRequestError, *OUTCOMES)


def _status_of(exc: Exception) -> tuple[int, str]:
    if isinstance(exc, ConsoleRequestError):  # the console's own refusals carry their status
        return exc.status, exc.kind
    outcome = outcome_of(exc)
    return outcome.http_status, outcome.kind


def _view(request: Request) -> View:
    state: ConsoleState = request.app.state.console
    return View(request, state, request.scope["state"]["principal"])


def _api_url(request: Request) -> str:
    query = f"?{request.url.query}" if request.url.query else ""
    return f"/api{request.url.path}{query}"


async def _body(request: Request, is_api: bool) -> dict[str, str]:
    """The action's parameters: a JSON object (API) or the form fields (page), as strings."""
    if is_api and request.headers.get("content-type", "").startswith("application/json"):
        try:
            raw = loads_bounded(await request.body() or b"{}")
        except ValueError as exc:
            raise BadRequestError(f"the request body is not JSON: {exc}") from None
        if not isinstance(raw, dict):
            raise BadRequestError("the request body must be a JSON object")
        return {str(k): _text(v) for k, v in raw.items()}
    form = await request.form()
    # A field sent more than once (checkboxes of one name) arrives as its values joined by commas.
    return {
        key: ",".join(v for v in form.getlist(key) if isinstance(v, str))
        for key in dict.fromkeys(form.keys())
        if any(isinstance(v, str) for v in form.getlist(key))
    }


def _text(value: Any) -> str:
    """A JSON value as a form field would carry it: a list as its items joined by commas."""
    if value is None:
        return ""
    if isinstance(value, list):
        return ",".join(_text(item) for item in value)
    return str(value)


def _check_csrf(view: View, request: Request) -> None:
    sent = view.params.pop(CSRF_FIELD, "") or request.headers.get(CSRF_HEADER, "")
    expected = csrf_token(view.state.secret, view.principal)
    if not sent or not hmac.compare_digest(sent.encode(), expected.encode()):
        raise ForbiddenError(
            "missing or wrong CSRF token: submit the console's own form, or send X-CSRF-Token "
            "(scripts: authenticate with a bearer token, which needs none)"
        )
    origin = request.headers.get("origin")
    if origin and origin != "null" and origin.split("://", 1)[-1] != request.headers.get("host", ""):
        raise ForbiddenError(f"the request comes from another origin ({origin})")


def _audit(
    view: View, action_name: str, target: str, outcome: str, details: dict[str, Any] | None = None
) -> None:
    record_action(
        view.state.redis,
        view.state.prefix,
        user=view.principal.name,
        action=action_name,
        target=target,
        outcome=outcome,
        kept_days=view.state.service.runtime.settings.retention_audit_days,
        details={
            key: value for key, value in (details or {}).items() if isinstance(value, str | int | float)
        },
    )

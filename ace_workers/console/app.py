"""The console's Starlette application: every area's routes behind the gate, templates, static files."""

from __future__ import annotations

import dataclasses
import json
import logging
import secrets
from typing import Any

from jinja2 import Environment, PackageLoader, select_autoescape
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles

from ..counts import counted
from ..distributed.service import Service
from ..distributed.tenancy.api_keys import ApiKeys
from .access import ConsoleAccess
from .areas import AREAS, NAVIGATION
from .charts import Series, line_chart, share_bar
from .security import ConsoleGate
from .times import humane_time
from .views import REFUSALS, ConsoleState, error_response

__all__ = ["build_console_app", "api_endpoints"]

logger = logging.getLogger(__name__)


def build_console_app(
    service: Service, access: ConsoleAccess, *, host: str, read_only: bool = False
) -> Starlette:
    """The console of the fleet ``service`` reaches, gated by ``access``; ``host`` is the address bound."""
    templates = Environment(
        loader=PackageLoader("ace_workers.console", "templates"),
        # Everything shown comes from Redis, which is untrusted: escape it all.
        autoescape=select_autoescape(default=True, default_for_string=True),
        trim_blocks=True,
        lstrip_blocks=True,
    )
    templates.filters["tojson_pretty"] = _json_pretty
    templates.filters["when"] = humane_time  # every time a page shows: "5 min ago", exact on hover
    templates.filters["counted"] = counted  # "1 skill", "2 skills"
    # Plots are drawn on the server from a page's data: its template builds the series.
    templates.globals.update(line_chart=line_chart, Series=Series, share_bar=share_bar)
    templates.globals["navigation"] = NAVIGATION  # the header's links, from the areas' one list
    if not access.no_auth and access.api_keys is None:
        # The fleet's API keys: the console's one credential (as a bearer token or basic auth's password).
        keys = ApiKeys(service.runtime.redis, prefix=service.runtime.settings.queue_prefix)
        access = dataclasses.replace(access, api_keys=keys)
    app = Starlette(
        routes=_routes(),
        middleware=[Middleware(ConsoleGate, access=access, host=host)],
        # Refusals go to Starlette's ExceptionMiddleware: the catch-all (Exception) handler re-raises
        # after answering, so uvicorn logs a traceback and drops the connection (unread bodies: a reset).
        exception_handlers={**dict.fromkeys(REFUSALS, error_response), Exception: error_response},
    )
    # A new secret per process: a restart makes open forms stale, never forgeable.
    app.state.console = ConsoleState(service, templates, secrets.token_bytes(32), read_only=read_only)
    return app


def _routes() -> list[BaseRoute]:
    routes: list[BaseRoute] = [
        Route("/", lambda request: RedirectResponse("/skillbooks", 303), methods=["GET"]),
        Route("/healthz", _healthz, methods=["GET"]),
        Route("/api", _api_index, methods=["GET"], name="api:index"),
        Mount("/static", StaticFiles(packages=[("ace_workers.console", "static")]), name="static"),
    ]
    for area in AREAS:
        routes.extend(area.routes)
    return routes


def api_endpoints(routes: list[BaseRoute]) -> list[dict[str, str]]:
    """Every ``/api`` endpoint: method, path and what it answers (the docstring page() gave it)."""
    found = []
    for route in routes:
        if isinstance(route, Route) and route.path.startswith("/api/"):
            for method in sorted((route.methods or set()) - {"HEAD"}):
                found.append({"method": method, "path": route.path, "summary": route.endpoint.__doc__ or ""})
    return found


def _api_index(request: Request) -> Response:
    return JSONResponse({"endpoints": api_endpoints(request.app.routes)})


def _healthz(request: Request) -> Response:
    """200 when the fleet's Redis answers a PING, else 503; no credentials needed, so it says only
    ok or not ok: the reason (which names Redis's address) goes to the console's log."""
    state: ConsoleState = request.app.state.console
    try:
        state.redis.ping()
    except Exception as exc:
        logger.warning("console /healthz: Redis did not answer: %s: %s", type(exc).__name__, exc)
        return JSONResponse({"ok": False, "redis": "not ok"}, status_code=503)
    return JSONResponse({"ok": True, "redis": "ok", "read_only": state.read_only})


def _json_pretty(value: Any) -> str:
    return json.dumps(value, indent=2, sort_keys=True, default=str, ensure_ascii=False)

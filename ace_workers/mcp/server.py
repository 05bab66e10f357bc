"""The MCP server: the ACE tools on the official ``mcp`` SDK's low-level Server.

The low-level server (not MCPServer's decorators) lets each tool's input
schema be exactly its pydantic request model, fields at the top level, and
lets every refusal leave as an MCP error with a code and a message that names
the problem. Requires the ``mcp`` extra; nothing here is imported by
``import ace_workers``.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ValidationError

from ..distributed.store.actors import local_user_actor
from ..distributed.tenancy.api_keys import OPERATOR, Scope
from ..extras import require_extra
from ..operations import Principal
from .errors import INVALID_PARAMS, MCPToolError
from .forget_tool import ForgetRequest, ForgetResponse
from .handlers import MCPHandlers
from .models import (
    AskRequest,
    AskResponse,
    LearnFeedbackRequest,
    LearnFeedbackResponse,
    LearnSampleRequest,
    LearnSampleResponse,
    SkillbookGetRequest,
    SkillbookGetResponse,
    SkillbookListRequest,
    SkillbookListResponse,
    SkillbookLoadRequest,
    SkillbookLoadResponse,
    SkillbookSaveRequest,
    SkillbookSaveResponse,
)
from .review_tools import (
    LabelMoveResponse,
    LabelSetRequest,
    ReviewApproveRequest,
    ReviewDecisionResponse,
    ReviewListRequest,
    ReviewListResponse,
    ReviewRejectRequest,
    SkillChangeRequest,
    SkillChangeResponse,
)

__all__ = ["TOOLS", "ToolSpec", "HTTPOptions", "build_server", "serve"]

logger = logging.getLogger(__name__)
SERVER_NAME = "ace-workers"
# The owner of every session over stdio: a stdio server has exactly one peer.
STDIO_PEER = "stdio"
_INVALID_REQUEST = -32600
_METHOD_NOT_FOUND = -32601


@dataclass(frozen=True)
class ToolSpec:
    """One tool: its request and response models, the handler method, what it does."""

    request: type[BaseModel]
    response: type[BaseModel]
    handler: str
    description: str
    acts: bool = False  # the handler also takes the actor a change is recorded with


TOOLS: dict[str, ToolSpec] = {
    "ace.ask": ToolSpec(
        AskRequest, AskResponse, "ask", "Answer a question with the learned skillbook in the prompt."
    ),
    "ace.learn.sample": ToolSpec(
        LearnSampleRequest,
        LearnSampleResponse,
        "learn_sample",
        "Learn from samples: answer each, compare with its ground truth, update the skillbook.",
    ),
    "ace.learn.feedback": ToolSpec(
        LearnFeedbackRequest,
        LearnFeedbackResponse,
        "learn_feedback",
        "Learn from the session's last ace.ask and the user's feedback on the answer.",
    ),
    "ace.skillbook.get": ToolSpec(
        SkillbookGetRequest, SkillbookGetResponse, "get_skillbook", "Statistics and skills of the skillbook."
    ),
    "ace.skillbook.list": ToolSpec(
        SkillbookListRequest,
        SkillbookListResponse,
        "list_skillbooks",
        "Fleet: the skillbooks your key's tenant owns (every one for the operator's token).",
    ),
    "ace.skillbook.save": ToolSpec(
        SkillbookSaveRequest,
        SkillbookSaveResponse,
        "save_skillbook",
        "Save the skillbook to a .json file in the server's skillbook directory.",
    ),
    "ace.skillbook.load": ToolSpec(
        SkillbookLoadRequest,
        SkillbookLoadResponse,
        "load_skillbook",
        "Replace the skillbook with a .json file from the server's skillbook directory.",
    ),
    "ace.review.list": ToolSpec(
        ReviewListRequest,
        ReviewListResponse,
        "review_list",
        "Fleet: the skillbook's proposals (learned changes waiting for review), with their conflicts.",
        acts=True,
    ),
    "ace.review.approve": ToolSpec(
        ReviewApproveRequest,
        ReviewDecisionResponse,
        "review_approve",
        "Fleet: apply pending proposals (proposal_id or proposal_ids) to the skillbook; each refused if "
        "decided already or conflicting; one that restates active skills changes nothing.",
        acts=True,
    ),
    "ace.review.reject": ToolSpec(
        ReviewRejectRequest,
        ReviewDecisionResponse,
        "review_reject",
        "Fleet: reject pending proposals (proposal_id or proposal_ids): nothing of them applies; logged.",
        acts=True,
    ),
    "ace.label.set": ToolSpec(
        LabelSetRequest,
        LabelMoveResponse,
        "label_set",
        "Fleet: point a label of the skillbook at a version (refused if it is not at `expect`); logged.",
        acts=True,
    ),
    "ace.skill.change": ToolSpec(
        SkillChangeRequest,
        SkillChangeResponse,
        "skill_change",
        "Fleet: pin, unpin, archive or restore skills of the skillbook, as one version.",
        acts=True,
    ),
    "ace.forget": ToolSpec(
        ForgetRequest,
        ForgetResponse,
        "forget",
        "Fleet, role admin: erase every record of the traces a selector matches (subject PATH=VALUE, "
        "trace_id, sample_id or batch_id) and list, archive or remove the skills learned only from them; "
        "irreversible, so confirm must be true (dry_run: only say what matches).",
        acts=True,
    ),
}


def build_server(handlers: MCPHandlers, *, handshake_only: bool = False) -> Any:
    """The low-level ``mcp`` Server answering the tools with ``handlers``.

    ``handshake_only`` (HTTP): refuse the 2026 era's ``server/discover``, whose requests come
    without a connection, so every client opens one with the initialize handshake instead.
    """
    require_extra("mcp", "the MCP server")
    import anyio
    import mcp_types as types
    from mcp.server import Server
    from mcp.shared.exceptions import MCPError

    tools = [
        types.Tool(
            name=name,
            description=spec.description,
            input_schema=spec.request.model_json_schema(),
            output_schema=spec.response.model_json_schema(),
        )
        for name, spec in TOOLS.items()
    ]

    async def list_tools(ctx: Any, params: Any) -> Any:
        return types.ListToolsResult(tools=tools)

    async def call_tool(ctx: Any, params: Any) -> Any:
        name = params.name
        spec = TOOLS.get(name)
        if spec is None:
            raise MCPError(INVALID_PARAMS, f"unknown tool {name!r}; the tools are {', '.join(TOOLS)}")
        owner = _connection_of(ctx, MCPError)
        caller = _scope_of(ctx)
        request = _parse_request(name, spec, params.arguments or {}, MCPError)
        handler: Callable[..., BaseModel] = getattr(handlers, spec.handler)
        extra = (_actor_of(ctx),) if spec.acts else ()
        try:
            response = await anyio.to_thread.run_sync(handler, request, owner, caller, *extra)
        except MCPToolError as exc:
            logger.info("%s refused: %s", name, exc)
            raise MCPError(exc.code, f"{name}: {exc}", {"kind": exc.kind, "tool": name}) from None
        data = response.model_dump(mode="json")
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=json.dumps(data))], structured_content=data
        )

    async def refuse_discover(ctx: Any, params: Any) -> Any:
        # Over HTTP the 2026 era has no connections, so no owner for a session: refusing its
        # probe makes every client fall back to the initialize handshake, which opens one.
        # (A stdio process has one peer, so either era has an owner there.)
        raise MCPError(_METHOD_NOT_FOUND, "server/discover: this server speaks the initialize handshake only")

    server = Server(SERVER_NAME, on_list_tools=list_tools, on_call_tool=call_tool)
    if handshake_only:
        server.add_request_handler("server/discover", types.RequestParams, refuse_discover)
    return server


def _connection_of(ctx: Any, error: Any) -> str:
    """Who calls: the stdio peer, or the HTTP connection named by its MCP session id."""
    request = ctx.request
    if request is None:
        return STDIO_PEER
    session_id = request.headers.get("mcp-session-id")
    if not session_id:
        raise error(
            _INVALID_REQUEST,
            "tools/call: no MCP session: connect with the initialize handshake, which opens one",
        )
    return f"http:{session_id}"


def _principal_of(ctx: Any) -> Principal | None:
    """The API key's principal the HTTP request came with (http_app.KeyVerifier); None for the
    local operator: stdio (the operator started the process) and --no-auth on loopback."""
    request = ctx.request
    user = request.scope.get("user") if request is not None else None
    principal = getattr(getattr(user, "access_token", None), "principal", None)
    return principal if isinstance(principal, Principal) else None


def _scope_of(ctx: Any) -> Scope:
    """What the caller may touch: its API key's scope, else fleet-wide (the local operator)."""
    principal = _principal_of(ctx)
    return principal.scope if principal is not None else OPERATOR


def _actor_of(ctx: Any) -> str:
    """Who decides, as the change log records it: ``key:<id>`` for an API key, else this process's
    user (stdio, or HTTP with --no-auth on loopback: only this machine reaches it)."""
    principal = _principal_of(ctx)
    return principal.name if principal is not None else local_user_actor()


def _parse_request(name: str, spec: ToolSpec, arguments: dict[str, Any], error: Any) -> BaseModel:
    try:
        return spec.request.model_validate(arguments)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(part) for part in item['loc']) or 'arguments'}: {item['msg']}"
            for item in exc.errors()
        )
        raise error(
            INVALID_PARAMS,
            f"{name}: invalid arguments: {problems}",
            {"kind": "invalid_request", "tool": name},
        ) from None


@dataclass(frozen=True)
class HTTPOptions:
    """Where the HTTP server listens, and ``no_auth``: serve without API keys (loopback only)."""

    host: str = "127.0.0.1"
    port: int = 8765
    no_auth: bool = False


def serve(handlers: MCPHandlers, *, transport: str = "stdio", http: HTTPOptions | None = None) -> None:
    """Serve until stdin closes (stdio) or the process is stopped (HTTP at ``/mcp``)."""
    import anyio

    try:
        if transport == "stdio":
            anyio.run(_serve_stdio, build_server(handlers))
        else:
            _serve_http(http_server(handlers, http or HTTPOptions()))
    finally:
        handlers.close()


def _serve_http(server: Any) -> None:
    """Run uvicorn's ``server`` as ``uvicorn.run`` would, failing when it could not start."""
    try:
        server.run()
    except KeyboardInterrupt:  # Ctrl-C: uvicorn raises the signal again once it has shut down
        return
    if not server.started:
        config = server.config
        raise SystemExit(f"the MCP server could not listen on {config.host}:{config.port} (see above)")


async def _serve_stdio(server: Any) -> None:
    from mcp.server.stdio import stdio_server

    from .stdio_input import AnswerMalformedInput

    async with stdio_server() as (read_stream, write_stream):
        readable = AnswerMalformedInput(read_stream, write_stream)
        await server.run(readable, write_stream, server.create_initialization_options())


def http_server(handlers: MCPHandlers, http: HTTPOptions) -> Any:
    """The uvicorn server for streamable HTTP at ``/mcp``, not yet running.

    ``run()`` serves until the process is stopped; from a thread other than the main one,
    setting ``should_exit`` stops it (uvicorn installs signal handlers in the main thread only).
    """
    import uvicorn

    from .auth import check_http_access
    from .http_app import build_http_app

    keys = handlers.backend.api_keys()  # the fleet's; None in process
    check_http_access(no_auth=http.no_auth, host=http.host, fleet=keys is not None)
    app = build_http_app(
        build_server(handlers, handshake_only=True),
        host=http.host,
        port=http.port,
        keys=None if http.no_auth else keys,
        idle_seconds=handlers.config.session_ttl_seconds,
        max_connections=handlers.config.max_connections,
    )
    return uvicorn.Server(uvicorn.Config(app, host=http.host, port=http.port, log_level="warning"))

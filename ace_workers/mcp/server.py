"""The MCP server: the six ACE tools on the official ``mcp`` SDK's low-level Server.

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

from ..extras import require_extra
from .errors import INVALID_PARAMS, MCPToolError
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
    SkillbookLoadRequest,
    SkillbookLoadResponse,
    SkillbookSaveRequest,
    SkillbookSaveResponse,
)

__all__ = ["TOOLS", "ToolSpec", "build_server", "serve"]

logger = logging.getLogger(__name__)
SERVER_NAME = "ace-workers"


@dataclass(frozen=True)
class ToolSpec:
    """One tool: its request and response models, the handler method, what it does."""

    request: type[BaseModel]
    response: type[BaseModel]
    handler: str
    description: str


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
}


def build_server(handlers: MCPHandlers) -> Any:
    """The low-level ``mcp`` Server answering the six tools with ``handlers``."""
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
        request = _parse_request(name, spec, params.arguments or {}, MCPError)
        handler: Callable[[Any], BaseModel] = getattr(handlers, spec.handler)
        try:
            response = await anyio.to_thread.run_sync(handler, request)
        except MCPToolError as exc:
            logger.info("%s refused: %s", name, exc)
            raise MCPError(exc.code, f"{name}: {exc}", {"kind": exc.kind, "tool": name}) from None
        data = response.model_dump(mode="json")
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=json.dumps(data))], structured_content=data
        )

    return Server(SERVER_NAME, on_list_tools=list_tools, on_call_tool=call_tool)


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


def serve(
    handlers: MCPHandlers, *, transport: str = "stdio", host: str = "127.0.0.1", port: int = 8765
) -> None:
    """Serve until stdin closes (stdio) or the process is stopped (HTTP at ``/mcp``)."""
    import anyio

    server = build_server(handlers)
    try:
        if transport == "stdio":
            anyio.run(_serve_stdio, server)
        else:
            _serve_http(server, host, port)
    finally:
        handlers.close()


async def _serve_stdio(server: Any) -> None:
    from mcp.server.stdio import stdio_server

    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


def _serve_http(server: Any, host: str, port: int) -> None:
    import uvicorn

    app = server.streamable_http_app(streamable_http_path="/mcp", host=host)
    uvicorn.run(app, host=host, port=port, log_level="warning")

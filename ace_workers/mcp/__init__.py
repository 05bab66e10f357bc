"""The MCP server: ACE as tools for coding assistants (``ace-workers mcp``, extra ``mcp``).

Six tools, ``ace.ask``, ``ace.learn.sample``, ``ace.learn.feedback``,
``ace.skillbook.get``, ``ace.skillbook.save`` and ``ace.skillbook.load``, served
over stdio or streamable HTTP by the official ``mcp`` SDK, from one of two back
ends: in this process (an ACELiteLLM per session) or the fleet (learning
enqueued to the workers, one versioned skillbook in Redis shared by all). On the
fleet, ``ace.review.list``, ``ace.review.approve`` and ``ace.review.reject`` decide
the proposals a review policy holds back (review_tools.py).
Importing this package needs no extra; building the server does.

An application on top of the library, like the CLI: the local back end serves an
:class:`~ace_workers.runners.ACELiteLLM` per session and the fleet back end a
:class:`~ace_workers.distributed.Producer`, so it sits above both the runners and
the fleet (the spec files it under ``integrations/``, but the integrations sit
below the runners, which build on their execute steps).
"""

from .config import MCPServerConfig
from .errors import (
    BackendError,
    HTTPAuthSettingError,
    InvalidToolRequest,
    MCPToolError,
    PathNotAllowedError,
    ReadOnlyError,
    SessionNotYoursError,
    UnknownSessionError,
)
from .factory import create_handlers
from .handlers import MCPHandlers
from .server import TOOLS, build_server, serve

__all__ = [
    # configuration and construction
    "MCPServerConfig",
    "MCPHandlers",
    "create_handlers",
    "build_server",
    "serve",
    "TOOLS",
    # errors
    "MCPToolError",
    "InvalidToolRequest",
    "UnknownSessionError",
    "ReadOnlyError",
    "PathNotAllowedError",
    "BackendError",
    "SessionNotYoursError",
    "HTTPAuthSettingError",
]

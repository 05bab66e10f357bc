"""create_handlers: the back end the settings choose, wrapped in the tools' guards."""

from __future__ import annotations

import logging

from ..distributed.llms import check_model_setting
from ..distributed.settings import WorkerSettings
from ..distributed.worker.runtime import build_llm
from .backend import MCPBackend
from .config import MCPServerConfig
from .handlers import MCPHandlers

__all__ = ["create_handlers"]

logger = logging.getLogger(__name__)


def create_handlers(config: MCPServerConfig, settings: WorkerSettings) -> MCPHandlers:
    """Handlers on the local back end, or the fleet's when ``config`` (or ACE_REDIS_URL) says so."""
    backend: MCPBackend
    if config.chosen_backend(settings.redis_url) == "fleet":
        from .fleet_backend import FleetBackend

        backend = FleetBackend(settings, config.skillbook, wait_seconds=config.wait_seconds)
    else:
        from .local_backend import LocalBackend

        check_model_setting(config.model, settings)  # now, not at the first tool call
        backend = LocalBackend(build_llm(config.model, settings))
    logger.info(
        "MCP server: %s back end, skillbook directory %s%s",
        backend.name,
        config.directory(),
        ", read-only" if config.read_only else "",
    )
    return MCPHandlers(backend, config)

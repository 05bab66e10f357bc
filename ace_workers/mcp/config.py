"""MCPServerConfig: the MCP server's options, read from ``ACE_MCP_*`` variables."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from ..distributed.errors import InvalidSettingError
from ..distributed.settings import SIM_MODEL
from ..distributed.store.labels import parse_skillbook_ref
from ..env import environment, read_env_fields

__all__ = ["MCPServerConfig", "MCP_ENV_PREFIX", "BACKENDS", "RETIRED_MCP_SETTINGS"]

MCP_ENV_PREFIX = "ACE_MCP_"
BACKENDS = ("auto", "local", "fleet")
# Settings that were, and what does their job now: one set is refused naming it.
RETIRED_MCP_SETTINGS = {
    "ACE_MCP_TOKEN": (
        "MCP over HTTP authenticates the fleet's API keys: create one with "
        "`ace-workers key create '*' --role admin --note mcp` and send it as `Authorization: Bearer KEY`"
    ),
}
Backend = Literal["auto", "local", "fleet"]


@dataclass(frozen=True)
class MCPServerConfig:
    """Options of ``ace-workers mcp``; each is read from ``ACE_MCP_<FIELD NAME IN UPPER CASE>``.

    - ``ACE_MCP_BACKEND``: "local" (an ACELiteLLM per session, in this process), "fleet" (the
      workers: learning is enqueued, the skillbook is the versioned one in Redis), or "auto":
      fleet when ``ACE_REDIS_URL`` is set [auto]
    - ``ACE_MCP_MODEL``: local back end's model: "sim" or a litellm model string [sim]
    - ``ACE_MCP_SKILLBOOK``: fleet back end's skillbook, shared by every session; ``NAME@LABEL``
      answers (and reads, saves) with the version of label LABEL while learning writes NAME's head,
      and refuses ace.skillbook.load, which would write a label [mcp]
    - ``ACE_MCP_SKILLBOOK_DIR``: the one directory ace.skillbook.save/load use [~/.ace-workers/skillbooks]
    - ``ACE_MCP_READ_ONLY``: refuse every tool that writes: learning, saving, loading [false]
    - ``ACE_MCP_SESSION_TTL_SECONDS``: a session (and an HTTP connection) unused this long is
      forgotten [3600]
    - ``ACE_MCP_MAX_SESSIONS``: sessions kept at once; the least recently used goes first [64]
    - ``ACE_MCP_MAX_CONNECTIONS``: HTTP connections open at once; a new one beyond is refused [32]
    - ``ACE_MCP_MAX_TEXT_CHARS``: longest question, context, feedback or ground truth [20000]
    - ``ACE_MCP_MAX_SAMPLES``: most samples one ace.learn.sample call takes [25]
    - ``ACE_MCP_WAIT_SECONDS``: fleet back end: how long ace.learn.sample waits for its batch [120]
    """

    backend: str = "auto"
    model: str = SIM_MODEL
    skillbook: str = "mcp"
    skillbook_dir: str = "~/.ace-workers/skillbooks"
    read_only: bool = False
    session_ttl_seconds: float = 3600.0
    max_sessions: int = 64
    max_connections: int = 32
    max_text_chars: int = 20_000
    max_samples: int = 25
    wait_seconds: float = 120.0

    def __post_init__(self) -> None:
        if self.backend not in BACKENDS:
            raise InvalidSettingError(
                "ACE_MCP_BACKEND", self.backend, f"expected one of {', '.join(BACKENDS)}"
            )
        parse_skillbook_ref(self.skillbook)  # NAME or NAME@LABEL
        positive = (
            "session_ttl_seconds",
            "max_sessions",
            "max_connections",
            "max_text_chars",
            "max_samples",
            "wait_seconds",
        )
        for name in positive:
            if getattr(self, name) <= 0:
                raise InvalidSettingError(
                    f"{MCP_ENV_PREFIX}{name.upper()}", getattr(self, name), "must be > 0"
                )

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> MCPServerConfig:
        """Options from the ``ACE_MCP_*`` variables; a misspelled one fails naming the closest."""
        values = read_env_fields(
            cls,
            environment(environ),
            prefix=MCP_ENV_PREFIX,
            owner="MCPServerConfig",
            retired=RETIRED_MCP_SETTINGS,
        )
        return cls(**values)

    def directory(self) -> Path:
        """The skillbook directory, with ``~`` expanded and symlinks resolved."""
        return Path(self.skillbook_dir).expanduser().resolve()

    def chosen_backend(self, redis_url: str | None) -> Backend:
        """The back end to run: the configured one, or for "auto" fleet exactly when Redis is set."""
        if self.backend == "auto":
            return "fleet" if redis_url else "local"
        return "fleet" if self.backend == "fleet" else "local"

"""MCPServerConfig: the MCP server's options, read from ``ACE_MCP_*`` variables."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from ..distributed.errors import InvalidSettingError
from ..distributed.settings import SIM_MODEL
from ..distributed.store.label_names import parse_skillbook_ref
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


def _documented(default: Any, help: str) -> Any:
    """A field with its help text, which the configuration reference shows (as WorkerSettings' do)."""
    return field(default=default, metadata={"help": help})


@dataclass(frozen=True)
class MCPServerConfig:
    """Options of ``ace-workers mcp``; each is read from ``ACE_MCP_<FIELD NAME IN UPPER CASE>``.

    Each field's ``help`` metadata says what it does; the documentation's configuration reference
    lists them, generated from these fields.
    """

    backend: str = _documented(
        "auto",
        '"local" (an ACELiteLLM per session, in this process), "fleet" (the workers: learning is '
        'enqueued, the skillbook is the versioned one in Redis), or "auto": fleet when ACE_REDIS_URL is set',
    )
    model: str = _documented(SIM_MODEL, 'local back end\'s model: "sim" or a litellm model string')
    skillbook: str = _documented(
        "mcp",
        "fleet back end's skillbook, shared by every session; NAME@LABEL answers (and reads, saves) "
        "with the version of label LABEL while learning writes NAME's head, and refuses "
        "ace.skillbook.load, which would write a label",
    )
    skillbook_dir: str = _documented(
        "~/.ace-workers/skillbooks", "the one directory ace.skillbook.save/load use"
    )
    read_only: bool = _documented(False, "refuse every tool that writes: learning, saving, loading")
    session_ttl_seconds: float = _documented(
        3600.0, "a session (and an HTTP connection) unused this long is forgotten"
    )
    max_sessions: int = _documented(64, "sessions kept at once; the least recently used goes first")
    max_connections: int = _documented(32, "HTTP connections open at once; a new one beyond is refused")
    max_text_chars: int = _documented(20_000, "longest question, context, feedback or ground truth")
    max_samples: int = _documented(25, "most samples one ace.learn.sample call takes")
    wait_seconds: float = _documented(120.0, "fleet back end: how long ace.learn.sample waits for its batch")

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

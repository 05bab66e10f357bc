"""The MCP server's guards on their own: sessions, confined paths, settings, the missing extra."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from ace_workers.distributed.errors import InvalidSettingError, UnknownSettingError
from ace_workers.distributed.settings import WorkerSettings
from ace_workers.errors import MissingExtraError
from ace_workers.mcp import MCPServerConfig, PathNotAllowedError, SessionNotYoursError, UnknownSessionError
from ace_workers.mcp.handlers import MCPHandlers
from ace_workers.mcp.local_backend import LocalBackend
from ace_workers.mcp.paths import path_in_directory
from ace_workers.mcp.server import build_server
from ace_workers.mcp.sessions import SessionStore
from ace_workers.sim import SimulatedLLM


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_a_session_lives_while_used_and_expires_after_its_ttl() -> None:
    clock = Clock()
    store = SessionStore(dict, ttl_seconds=10, max_sessions=8, clock=clock)
    first = store.open("a", "me")
    clock.now = 9
    assert store.existing("a", "me") is first  # used at 9: lives until 19
    clock.now = 18
    assert store.open("a", "me") is first
    clock.now = 28.5
    with pytest.raises(UnknownSessionError, match="'a' does not exist or expired"):
        store.existing("a", "me")
    assert store.open("a", "me") is not first


def test_the_least_recently_used_session_goes_first_when_full() -> None:
    store = SessionStore(dict, ttl_seconds=100, max_sessions=2)
    store.open("a", "me")
    store.open("b", "me")
    store.existing("a", "me")
    store.open("c", "me")
    assert len(store) == 2
    store.existing("a", "me")
    with pytest.raises(UnknownSessionError):
        store.existing("b", "me")


def test_a_session_answers_only_the_connection_that_opened_it() -> None:
    store = SessionStore(dict, ttl_seconds=100, max_sessions=8)
    mine = store.open("alice", "http:one")
    with pytest.raises(SessionNotYoursError, match="'alice' belongs to another connection"):
        store.open("alice", "http:two")
    with pytest.raises(SessionNotYoursError):
        store.existing("alice", "http:two")
    assert store.existing("alice", "http:one") is mine


def test_paths_resolve_inside_the_directory_only(tmp_path: Path) -> None:
    root = (tmp_path / "books").resolve()
    root.mkdir()
    assert path_in_directory(root, "team/a.json") == root / "team" / "a.json"
    (root / "escape").symlink_to(tmp_path)
    for bad in ("../a.json", "/etc/passwd.json", "escape/a.json", "a.txt", "a.json\x00.txt"):
        with pytest.raises(PathNotAllowedError):
            path_in_directory(root, bad)


def test_settings_come_from_ace_mcp_variables_and_a_typo_names_the_closest() -> None:
    config = MCPServerConfig.from_env({"ACE_MCP_READ_ONLY": "yes", "ACE_MCP_MAX_SAMPLES": "5"})
    assert (config.read_only, config.max_samples) == (True, 5)
    with pytest.raises(UnknownSettingError, match=r"ACE_MCP_READ_ONLYY \(did you mean ACE_MCP_READ_ONLY\?"):
        MCPServerConfig.from_env({"ACE_MCP_READ_ONLYY": "1"})
    with pytest.raises(InvalidSettingError, match=r"ACE_MCP_BACKEND='cloud'"):
        MCPServerConfig(backend="cloud")
    # The workers' settings leave ACE_MCP_* to the server.
    assert WorkerSettings.from_env({"ACE_MCP_READ_ONLY": "1"}) == WorkerSettings()


def test_auto_picks_the_fleet_exactly_when_redis_is_configured() -> None:
    assert MCPServerConfig().chosen_backend(None) == "local"
    assert MCPServerConfig().chosen_backend("redis://127.0.0.1:6379/0") == "fleet"
    assert MCPServerConfig(backend="local").chosen_backend("redis://x") == "local"


def test_building_the_server_without_the_mcp_extra_names_the_extra(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    handlers = MCPHandlers(LocalBackend(SimulatedLLM()), MCPServerConfig(skillbook_dir=str(tmp_path)))
    monkeypatch.setitem(sys.modules, "mcp", None)
    with pytest.raises(MissingExtraError, match=r"pip install 'ace-workers\[mcp\]'"):
        build_server(handlers)

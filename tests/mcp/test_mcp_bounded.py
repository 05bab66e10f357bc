"""``ace.skillbook.load`` refuses a file with an over-long skill or nested too deeply, naming it."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest

from ace_workers.core.skill_limits import MAX_CONTENT_CHARS
from tests.support.mcp import http_client, refused, server_env

pytestmark = pytest.mark.slow


def test_a_skillbook_file_over_the_limits_is_an_invalid_request_naming_the_skill(tmp_path: Path) -> None:
    skill = {"section": "general", "content": "x" * 200_000}
    (tmp_path / "long.json").write_text(json.dumps({"skills": {"general-00001": skill}}))
    (tmp_path / "deep.json").write_text("[" * 200_000 + "]" * 200_000)

    async def scenario() -> None:
        async with http_client(server_env(tmp_path, ACE_MCP_BACKEND="local")) as client:
            error = await refused(client, "ace.skillbook.load", {"session_id": "s", "path": "long.json"})
            assert error.code == -32602
            assert (
                f"skill 'general-00001': its content has 200000 characters, over the {MAX_CONTENT_CHARS}"
                in error.message
            )
            error = await refused(client, "ace.skillbook.load", {"session_id": "s", "path": "deep.json"})
            assert error.code == -32602
            assert "deep.json: JSON nested deeper than 200 levels" in error.message

    anyio.run(scenario)

"""Claude Code in the tests: the handle on a fake ``claude`` executable, and recorded transcripts."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest


@dataclass
class FakeClaude:
    """Where the fake logs its runs, and how to steer it."""

    log: Path
    replies: Path
    monkeypatch: pytest.MonkeyPatch

    def runs(self) -> list[dict[str, Any]]:
        """One ``{"argv", "stdin", "cwd"}`` per run so far."""
        if not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text().splitlines()]

    def mode(self, mode: str) -> None:
        """ok, fail, huge or garbage (stream-json runs)."""
        self.monkeypatch.setenv("FAKE_CLAUDE_MODE", mode)

    def reply_with(self, *replies: str) -> None:
        """The ``result`` texts of the next json runs, in order (``!error``: a failed run)."""
        self.replies.write_text(json.dumps(list(replies)))


def claude_session(path: Path, task: str, tool_output: str = "ok") -> Path:
    """A Claude Code transcript: the task, one Bash call and its output, a wrong answer."""
    session = path.stem
    lines = [
        {
            "type": "user",
            "sessionId": session,
            "uuid": "1",
            "parentUuid": None,
            "message": {"role": "user", "content": task},
        },
        {
            "type": "assistant",
            "sessionId": session,
            "uuid": "2",
            "parentUuid": "1",
            "message": {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "cat"}}],
            },
        },
        {
            "type": "user",
            "sessionId": session,
            "uuid": "3",
            "parentUuid": "2",
            "message": {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "t1", "content": tool_output}],
            },
        },
        {
            "type": "assistant",
            "sessionId": session,
            "uuid": "4",
            "parentUuid": "3",
            "message": {"role": "assistant", "content": "no idea"},
        },
    ]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path

"""A fake ``claude`` executable first on PATH, logging every run's arguments and prompt."""

from __future__ import annotations

import json
import os
import stat
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

FAKE = Path(__file__).with_name("fake_claude.py")


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


@pytest.fixture
def fake_claude(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakeClaude:
    """The fake CLI as ``claude`` first on PATH."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = bin_dir / "claude"
    script.write_text(f"#!{sys.executable}\n" + FAKE.read_text())
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    fake = FakeClaude(tmp_path / "runs.jsonl", tmp_path / "replies.json", monkeypatch)
    monkeypatch.setenv("FAKE_CLAUDE_LOG", str(fake.log))
    monkeypatch.setenv("FAKE_CLAUDE_REPLIES", str(fake.replies))
    fake.mode("ok")
    return fake

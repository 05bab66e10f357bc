"""A fake ``claude`` executable first on PATH, logging every run's arguments and prompt."""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

import pytest

from tests.support.claude_code import FakeClaude

FAKE = Path(__file__).with_name("fake_claude.py")


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

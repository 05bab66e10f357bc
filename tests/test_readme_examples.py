"""The README's examples for the MCP server, the Recursive Reflector and tracing run as written.

Each ``python`` block of those sections runs in a fresh interpreter, in an
empty directory, with no ACE_* settings and this virtualenv's commands on PATH.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
# The sections whose examples need no network, no API key and no service but the test Redis.
RUNNABLE_SECTIONS = ("### MCP server",)
BLOCK = re.compile(r"```python\n(.*?)```", re.S)


def section_text(heading: str) -> str:
    text = README.read_text()
    start = text.index(f"\n{heading}\n")
    following = re.search(r"\n#{2,3} ", text[start + len(heading) + 2 :])
    return text[start : start + len(heading) + 2 + following.start()] if following else text[start:]


def examples() -> list[tuple[str, int, str]]:
    found = []
    for heading in RUNNABLE_SECTIONS:
        blocks = BLOCK.findall(section_text(heading))
        assert blocks, f"README section {heading!r} has no python example"
        found += [(heading, number, code) for number, code in enumerate(blocks, 1)]
    return found


@pytest.mark.slow
@pytest.mark.parametrize(("heading", "number", "code"), examples(), ids=lambda value: str(value)[:30])
def test_the_readme_example_runs_as_written(heading: str, number: int, code: str, tmp_path: Path) -> None:
    env = {name: value for name, value in os.environ.items() if not name.startswith(("ACE_", "OTEL_"))}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["HOME"] = str(tmp_path)  # whatever an example keeps under ~ stays in the test's directory
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=180
    )
    assert done.returncode == 0, f"{heading} example {number} failed:\n{done.stdout}\n{done.stderr}"

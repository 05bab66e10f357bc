"""The README's code blocks, and running one as a reader would."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"


def section_text(heading: str) -> str:
    """The README's section under ``heading`` (e.g. ``"### LangChain"``), up to the next heading."""
    text = README.read_text()
    start = text.index(f"\n{heading}\n")
    body = start + len(heading) + 2
    following = re.search(r"\n#{2,3} ", text[body:])
    return text[start : body + following.start()] if following else text[start:]


def code_blocks(heading: str, language: str = "python") -> list[str]:
    """The code of each ```language block of the section under ``heading``, in order."""
    return re.findall(rf"```{re.escape(language)}\n(.*?)```", section_text(heading), re.S)


def examples(*headings: str) -> list[tuple[str, int, str]]:
    """``(heading, number, code)`` for every python block of the sections; each must have one."""
    found = []
    for heading in headings:
        blocks = code_blocks(heading)
        assert blocks, f"README section {heading!r} has no python example"
        found += [(heading, number, code) for number, code in enumerate(blocks, 1)]
    return found


def run_example(code: str, workdir: Path, **settings: str) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a fresh interpreter in ``workdir``, with no ACE_*, OTEL_* or OPIK_* settings
    but ``settings``, and this virtualenv's commands on PATH."""
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=workdir,
        env=_reader_environment(workdir, settings),
        capture_output=True,
        text=True,
        timeout=180,
    )


def run_shell_example(code: str, workdir: Path, **settings: str) -> subprocess.CompletedProcess[str]:
    """Run a ``sh`` block with bash in ``workdir``, stopping at the first failing command
    (``set -eo pipefail``), in the same environment as run_example."""
    return subprocess.run(
        ["bash", "-c", f"set -eo pipefail\n{code}"],
        cwd=workdir,
        env=_reader_environment(workdir, settings),
        capture_output=True,
        text=True,
        timeout=300,
    )


def _reader_environment(workdir: Path, settings: dict[str, str]) -> dict[str, str]:
    """A reader's environment: no ACE_*, OTEL_* or OPIK_* settings but ``settings``, this
    virtualenv's commands first on PATH, HOME in ``workdir``."""
    prefixes = ("ACE_", "OTEL_", "OPIK_")
    env = {name: value for name, value in os.environ.items() if not name.startswith(prefixes)}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["HOME"] = str(workdir)  # whatever an example keeps under ~ stays in the test's directory
    env.update(settings)
    return env

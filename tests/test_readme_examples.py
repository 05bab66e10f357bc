"""The README's examples for the MCP server, OpenClaw, the Recursive Reflector and tracing run as written.

Each ``python`` block of those sections runs in a fresh interpreter, in an
empty directory, with no ACE_*, OTEL_* or OPIK_* settings and this virtualenv's
commands on PATH. The Opik example gets a local stand-in Opik server, the way
a reader would have their own.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from .observability.opik_tracing.conftest import opik_stub  # noqa: F401 (a fixture)
from .observability.opik_tracing.stub import OpikStub

README = Path(__file__).resolve().parents[1] / "README.md"
# The sections whose examples need no network, no API key and no service of their own.
SELF_CONTAINED = (
    "### MCP server",
    "### LangChain",
    "### browser-use",
    "### Claude Code and OpenClaw",
    "### The Recursive Reflector",
    "### Tracing with OpenTelemetry",
)
OPIK_SECTION = "### Tracing with Opik"
BLOCK = re.compile(r"```python\n(.*?)```", re.S)


def section_text(heading: str) -> str:
    text = README.read_text()
    start = text.index(f"\n{heading}\n")
    body = start + len(heading) + 2
    following = re.search(r"\n#{2,3} ", text[body:])
    return text[start : body + following.start()] if following else text[start:]


def examples(*headings: str) -> list[tuple[str, int, str]]:
    found = []
    for heading in headings:
        blocks = BLOCK.findall(section_text(heading))
        assert blocks, f"README section {heading!r} has no python example"
        found += [(heading, number, code) for number, code in enumerate(blocks, 1)]
    return found


def run_example(code: str, workdir: Path, **settings: str) -> subprocess.CompletedProcess[str]:
    prefixes = ("ACE_", "OTEL_", "OPIK_")
    env = {name: value for name, value in os.environ.items() if not name.startswith(prefixes)}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["HOME"] = str(workdir)  # whatever an example keeps under ~ stays in the test's directory
    env.update(settings)
    return subprocess.run(
        [sys.executable, "-c", code], cwd=workdir, env=env, capture_output=True, text=True, timeout=180
    )


@pytest.mark.slow
@pytest.mark.parametrize(("heading", "number", "code"), examples(*SELF_CONTAINED), ids=lambda v: str(v)[:30])
def test_the_readme_example_runs_as_written(heading: str, number: int, code: str, tmp_path: Path) -> None:
    done = run_example(code, tmp_path)
    assert done.returncode == 0, f"{heading} example {number} failed:\n{done.stdout}\n{done.stderr}"


@pytest.mark.slow
def test_the_opik_example_sends_a_trace_per_sample_to_the_opik_it_is_pointed_at(
    opik_stub: OpikStub,  # noqa: F811 (the imported fixture)
    tmp_path: Path,
) -> None:
    ((_, _, code),) = examples(OPIK_SECTION)
    done = run_example(
        code,
        tmp_path,
        OPIK_URL_OVERRIDE=opik_stub.url,
        OPIK_WORKSPACE="readme",
        OPIK_API_KEY="readme-key",
        OPIK_CHECK_TLS_CERTIFICATE="false",
        OPIK_SENTRY_ENABLE="false",
        OPIK_ANALYTICS_ENABLE="false",
        LITELLM_LOCAL_MODEL_COST_MAP="True",
    )
    assert done.returncode == 0, f"the Opik example failed:\n{done.stdout}\n{done.stderr}"
    samples = [trace for trace in opik_stub.traces() if trace.get("name") == "ace_sample"]
    assert len(samples) == 4
    assert {trace["project_name"] for trace in samples} == {"my-project"}

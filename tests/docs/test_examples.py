"""The docs' examples run as written: the quick start (README and getting started), the MCP
server, LangChain, browser-use, OpenClaw, the Recursive Reflector, tracing, the pipeline engine,
and steering what is learned (a shell session).

Each ``python`` block of those sections runs in a fresh interpreter, in an
empty directory, with no ACE_*, OTEL_* or OPIK_* settings and this virtualenv's
commands on PATH. The Opik example gets a local stand-in Opik server, the way
a reader would have their own.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.docs import examples, run_example, run_shell_example, runnable_blocks
from tests.support.opik import OpikStub

# The quick start, as the README and the getting-started page print it.
QUICK_STARTS = examples(
    ("README.md", "## Quick start: learning on your machine"),
    ("docs/getting-started.md", "## Learning in one process"),
)
# The sections whose examples need no network, no API key and no service of their own.
SELF_CONTAINED = examples(
    ("docs/integrations/mcp.md", None),
    ("docs/integrations/langchain.md", "## Learn while your chain works"),
    ("docs/integrations/browser-use.md", "## Learn from recorded runs"),
    ("docs/integrations/claude-code.md", "## Learn from recorded sessions"),
    ("docs/recursive-reflector.md", None),
    ("docs/tracing.md", "## OpenTelemetry"),
    ("docs/architecture.md", "## The pipeline engine"),
)
(OPIK_EXAMPLE,) = runnable_blocks("docs/tracing.md", "## Opik")
MCP_FIRST_EXAMPLE = runnable_blocks("docs/integrations/mcp.md")[0]
(STEERING_SCRIPT,) = runnable_blocks("docs/steering.md", "## A worked example", language="sh")


@pytest.mark.slow
@pytest.mark.parametrize(("where", "number", "code"), QUICK_STARTS, ids=lambda v: str(v)[:30])
def test_the_quick_start_runs_offline_as_printed_and_shows_learning(
    where: str, number: int, code: str, tmp_path: Path
) -> None:
    done = run_example(code, tmp_path)
    assert done.returncode == 0, f"the quick start of {where} failed:\n{done.stdout}\n{done.stderr}"
    printed = done.stdout.splitlines()
    assert printed[:2] == ["before learning: 5831", "after learning: 1385"]
    assert "- [zorb-00001] For zorb questions, reverse the digits of the input." in done.stdout
    assert (tmp_path / "skillbook.json").is_file()


@pytest.mark.slow
@pytest.mark.parametrize(("where", "number", "code"), SELF_CONTAINED, ids=lambda v: str(v)[:40])
def test_the_docs_example_runs_as_written(where: str, number: int, code: str, tmp_path: Path) -> None:
    done = run_example(code, tmp_path)
    assert done.returncode == 0, f"{where} example {number} failed:\n{done.stdout}\n{done.stderr}"


@pytest.mark.slow
def test_the_opik_example_sends_a_trace_per_sample_to_the_opik_it_is_pointed_at(
    opik_stub: OpikStub,
    tmp_path: Path,
) -> None:
    done = run_example(
        OPIK_EXAMPLE,
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


@pytest.mark.slow
def test_the_mcp_example_prints_learning_take_effect_as_the_page_shows(tmp_path: Path) -> None:
    first = MCP_FIRST_EXAMPLE
    done = run_example(first, tmp_path)
    assert done.returncode == 0, done.stderr
    shown = [line.removeprefix("# ") for line in first.splitlines() if line.startswith("# ask ")]
    assert shown == ["ask 1: 7061", "ask 2: 7061", "ask 3: 7061", "ask 4: 7061", "ask 5: 1607"]
    assert done.stdout.splitlines() == shown


@pytest.mark.slow
# About 30 s of CLI processes alone (each imports the CLI and reaches Redis); four test workers on
# two busy cores have stretched it past the default 120 s.
@pytest.mark.timeout(400)
def test_the_steering_example_reviews_labels_evaluates_and_promotes_as_the_page_says(
    tmp_path: Path,
) -> None:
    done = run_shell_example(STEERING_SCRIPT, tmp_path)
    assert done.returncode == 0, f"the steering example failed:\n{done.stdout}\n{done.stderr}"
    out = done.stdout
    # One proposal per idea (three samples each), not one per sample; after the second run, one.
    assert "skillbook 'support': 2 pending proposals" in out
    assert "skillbook 'support': 1 pending proposal\n" in out
    assert "approved by user:" in out
    assert "rejected by user:" in out
    assert "skill zorb-00001 in skillbook 'support'" in out  # skillbook why: its evidence
    assert " ADD by skill_manager batch " in out
    assert "accuracy    │ 0.0%  │ 50.0%" in out  # prod, then canary
    assert "promoted: label 'prod' of skillbook 'support' moved from version 3" in out
    rows = [
        [cell.strip() for cell in line.split("│")[1:-1]] for line in out.splitlines() if line.startswith("│")
    ]
    # label list's table: label, version, how far behind the head.
    listed = {row[0]: row[1] for row in rows if len(row) == 3 and row[0] in ("prod", "canary")}
    assert listed["prod"] == listed["canary"]

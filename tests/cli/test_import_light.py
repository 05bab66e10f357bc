"""The state commands answer without the heavy stack: no Celery, no LLM client, no embedder, no tracer.

Each is run as its own process (a test process has imported everything already) against the
test Redis; what it imported is read from ``sys.modules`` as it exits.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import redis

from ace_workers.core import UpdateBatch, UpdateOperation
from ace_workers.distributed.store.batches import BatchStore
from ace_workers.distributed.store.store import RedisSkillbookStore
from tests.support.schema0 import stamp_current_schema

PREFIX = "clilight"
HEAVY = ("celery", "kombu", "billiard", "litellm", "torch", "sentence_transformers", "opik")
# Runs the console script, then writes the heavy top-level modules it imported to the file named first.
WRAPPER = (
    "import atexit, json, sys\n"
    "out = sys.argv.pop(1)\n"
    f"heavy = {HEAVY!r}\n"
    "loaded = lambda: sorted({m.split('.')[0] for m in sys.modules} & set(heavy))\n"
    "atexit.register(lambda: open(out, 'w').write(json.dumps(loaded())))\n"
    "from ace_workers.cli import main\n"
    "main()\n"
)


@pytest.fixture
def fleet_env(redis_client: redis.Redis, redis_url: str) -> dict[str, str]:
    """The environment of a command on the test Redis, holding a skillbook and a batch on it."""
    stamp_current_schema(redis_client, PREFIX)
    RedisSkillbookStore(redis_client, "book", prefix=PREFIX).apply(
        UpdateBatch(reasoning="", operations=[UpdateOperation(type="ADD", section="math", content="Units.")])
    )
    BatchStore(redis_client, prefix=PREFIX, ttl_seconds=600).create(
        "b1", skillbook="book", recipe="trace_analyser", per_epoch=1, epochs=1, skills_at_start=1
    )
    env = {name: value for name, value in os.environ.items() if not name.startswith("ACE_")}
    return {**env, "ACE_REDIS_URL": redis_url, "ACE_QUEUE_PREFIX": PREFIX}


def imported_heavy(
    env: dict[str, str], tmp_path: Path, *args: str
) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    out = tmp_path / "modules.json"
    done = subprocess.run(
        [sys.executable, "-c", WRAPPER, str(out), *args], env=env, capture_output=True, text=True, timeout=60
    )
    return done, json.loads(out.read_text())


@pytest.mark.parametrize(
    "args",
    [
        ("status", "b1"),
        ("skillbook", "list"),
        ("skillbook", "show", "book"),
        ("tenant", "list"),
        ("key", "list"),
        ("dead-letters", "list"),
    ],
    ids=" ".join,
)
def test_a_state_command_imports_nothing_heavy(
    fleet_env: dict[str, str], tmp_path: Path, args: tuple[str, ...]
) -> None:
    done, heavy = imported_heavy(fleet_env, tmp_path, *args)
    assert done.returncode == 0, done.stderr
    assert heavy == [], f"{' '.join(args)} imported {heavy}"


def test_status_still_reports_the_batch(fleet_env: dict[str, str], tmp_path: Path) -> None:
    done, _ = imported_heavy(fleet_env, tmp_path, "status", "b1", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["skillbook"] == "book"


def test_importing_the_operations_layer_imports_nothing_heavy() -> None:
    loaded = f"sorted({{m.split('.')[0] for m in sys.modules}} & set({HEAVY!r}))"
    code = f"import sys, ace_workers.operations; print({loaded})"
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.strip() == "[]"


def test_version_answers_before_any_command_is_imported() -> None:
    probe = (
        "import sys\n"
        "sys.argv = ['ace-workers', '--version']\n"
        "from ace_workers.cli import main\n"
        "main()\n"
        "print(sorted(m for m in ('typer', 'redis', 'ace_workers.cli.root') if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    version = tomllib.loads((Path(__file__).resolve().parents[2] / "pyproject.toml").read_text())
    assert done.stdout.splitlines() == [f"ace-workers {version['project']['version']}", "[]"]


@pytest.mark.parametrize("args", [("--help",), ("skillbook", "--help"), ("tenant", "--help")], ids=" ".join)
def test_help_lists_the_commands_without_loading_what_they_run(args: tuple[str, ...]) -> None:
    # --help needs each command's signature, not its work: no Redis client, no skillbook model.
    probe = (
        "import sys\n"
        f"sys.argv = ['ace-workers', *{args!r}]\n"
        "from ace_workers.cli import main\n"
        "try:\n"
        "    main()\n"
        "except SystemExit:\n"
        "    pass\n"
        "wanted = ('redis', 'numpy', 'pydantic', 'ace_workers.core.skillbook',\n"
        "          'ace_workers.operations', *HEAVY)\n"
        "print(sorted(m for m in wanted if m in sys.modules), file=sys.stderr)\n"
    ).replace("HEAVY", repr(HEAVY))
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert "Usage" in done.stdout
    assert done.stderr.strip().splitlines()[-1] == "[]"

"""The wheel installed in a new virtualenv outside the tree runs: ``--version``, ``learn`` on an
embedded Redis, a worker process with ``enqueue`` and ``status``, the console and the MCP server.

Every command runs in an empty folder with no PYTHONPATH, so what it imports is what the wheel
installed (the first test checks that), and a file the wheel left out fails here as it would for
a user (the Lua scripts of tenancy/ once did: every command died at import).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis

from ace_workers.distributed.service import Service, build_service
from ace_workers.distributed.settings import WorkerSettings
from ace_workers.distributed.tenancy import ApiKeys
from tests.support.console import console_process
from tests.support.mcp import INITIALIZE
from tests.support.packaging import InstalledProject, project_version
from tests.support.processes import REPO, start_worker, stop, wait_until_served
from tests.support.waiting import wait_for

pytestmark = pytest.mark.slow

SAMPLES = "sim/data/synthetic_samples.jsonl"  # the bundled samples, inside the installed package
WHERE = "import json, sys, ace_workers, pipeline; print(json.dumps([ace_workers.__file__, pipeline.__file__, "
WHERE += "ace_workers.__version__, sys.path]))"


@pytest.fixture(scope="module")
def samples(installed: InstalledProject) -> Path:
    """The bundled samples file, found through the installed package."""
    code = f"from importlib.resources import files; print(files('ace_workers') / {SAMPLES!r})"
    return Path(installed.python_says(code).strip())


def samples_in(samples: Path) -> list[dict[str, Any]]:
    """The samples of a JSONL file."""
    return [json.loads(line) for line in samples.read_text(encoding="utf-8").splitlines() if line.strip()]


def rules_in(samples: Path) -> set[str]:
    """The hidden rules of the samples' topics (each sample's metadata names its topic's rule)."""
    return {sample["metadata"]["rule"] for sample in samples_in(samples)}


def test_commands_run_outside_the_tree(installed: InstalledProject) -> None:
    assert not installed.workdir.resolve().is_relative_to(REPO)
    assert not installed.root.resolve().is_relative_to(REPO)


def test_the_project_imports_from_the_new_virtualenv_not_from_the_tree(installed: InstalledProject) -> None:
    module, engine, version, path = json.loads(installed.python_says(WHERE))
    assert Path(module).is_relative_to(installed.site_packages)
    assert Path(engine).is_relative_to(installed.site_packages)
    assert version == project_version()
    assert str(REPO) not in path
    source = REPO / "ace_workers"
    # An entry of "" (or any relative one) is the command's folder, the virtualenv's workdir.
    assert [entry for entry in path if (installed.workdir / entry / "ace_workers").resolve() == source] == []


def test_version_prints_the_version_of_pyproject(installed: InstalledProject) -> None:
    ran = installed.run("--version")
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.strip() == f"ace-workers {project_version()}"


def test_the_bundled_samples_are_installed(installed: InstalledProject, samples: Path) -> None:
    assert samples.is_relative_to(installed.site_packages)
    assert len(rules_in(samples)) == 5


def test_learn_on_the_bundled_samples_learns_their_five_rules(
    installed: InstalledProject, samples: Path
) -> None:
    ran = installed.run("learn", str(samples), "--model", "sim", "--json", timeout=180)
    assert ran.returncode == 0, ran.stderr
    report = json.loads(ran.stdout)
    assert (report["state"], report["done"], report["failed"]) == ("done", report["total"], 0)
    skills = report["book"]["skills"].values()
    assert {skill["content"] for skill in skills if skill["status"] == "active"} == rules_in(samples)


@pytest.fixture
def fleet(
    installed: InstalledProject, redis_url: str, redis_client: redis.Redis, tmp_path: Path
) -> Iterator[tuple[dict[str, str], Service]]:
    """One installed ``ace-workers worker`` on all three queues of the test Redis: its settings and a
    service (in this process) to see its queues by."""
    settings = {"ACE_REDIS_URL": redis_url, "ACE_QUEUE_PREFIX": f"t{uuid.uuid4().hex[:8]}"}
    service = build_service(WorkerSettings.from_env(settings), redis_url=redis_url)
    log = tmp_path / "worker.log"
    worker = start_worker(
        installed.env(**settings),
        log,
        queues="execute,learn,write",
        program=(str(installed.ace_workers),),
        cwd=installed.workdir,
    )
    try:
        wait_until_served(service, ("execute", "learn", "write"))
        yield settings, service
    finally:
        stop(worker)
        service.close()


def test_a_worker_learns_what_enqueue_sent_and_status_reports_it(
    installed: InstalledProject, samples: Path, fleet: tuple[dict[str, str], Service]
) -> None:
    settings, _ = fleet
    enqueued = installed.run("enqueue", str(samples), "--skillbook", "packaged", **settings)
    assert enqueued.returncode == 0, enqueued.stderr
    batch_id = enqueued.stdout.strip()

    def finished() -> dict[str, Any] | None:
        ran = installed.run("status", batch_id, "--json", **settings)
        assert ran.returncode == 0, ran.stderr
        status: dict[str, Any] = json.loads(ran.stdout)
        return status if status["state"] != "running" else None

    status = wait_for(finished, 90, f"batch {batch_id} to finish", every=0.5)
    assert (status["state"], status["done"], status["failed"]) == ("done", len(samples_in(samples)), 0)


def test_the_console_serves_a_page_with_its_templates_and_static_files(
    installed: InstalledProject, redis_url: str, redis_client: redis.Redis, tmp_path: Path
) -> None:
    env = installed.env(ACE_REDIS_URL=redis_url)
    command = [str(installed.ace_workers), "console"]
    with console_process(command, env, tmp_path / "console.log", cwd=installed.workdir) as url:
        _, secret = ApiKeys(redis_client).create("*", "admin", note="ops")  # the console's Redis and prefix
        auth = ("ops", secret)
        page = httpx.get(f"{url}/skillbooks", auth=auth, timeout=30)
        style = httpx.get(f"{url}/static/console.css", timeout=30)
    assert page.status_code == 200, page.text[:500]
    assert '<link rel="stylesheet" href="/static/console.css">' in page.text  # base.html, around the page
    assert style.status_code == 200
    assert style.text == (REPO / "ace_workers" / "console" / "static" / "console.css").read_text()


def test_the_mcp_server_answers_initialize_over_stdio(installed: InstalledProject, tmp_path: Path) -> None:
    ran = installed.run(
        "mcp", input=json.dumps(INITIALIZE) + "\n", timeout=60, ACE_MCP_SKILLBOOK_DIR=str(tmp_path)
    )
    replies = [json.loads(line) for line in ran.stdout.splitlines() if line.strip()]
    assert replies, f"no reply (exit {ran.returncode}): {ran.stderr[-2000:]}"
    assert replies[0]["id"] == INITIALIZE["id"]
    assert replies[0]["result"]["serverInfo"]["name"] == "ace-workers"

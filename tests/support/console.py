"""The web console for the tests: served by uvicorn in a thread, and clients that sign in to it."""

from __future__ import annotations

import base64
import os
import re
import subprocess
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn

from ace_workers.console.access import ConsoleAccess
from ace_workers.console.app import build_console_app
from ace_workers.distributed.service import Service
from tests.support.processes import terminate
from tests.support.servers import free_port
from tests.support.waiting import wait_for

USER, PASSWORD = "ops", "ops-console-password"
TOKEN_NAME, TOKEN = "ci-script", "ci-token-0123456789abcdef"
ACCESS = ConsoleAccess(users={USER: PASSWORD, "viewer": "viewer-password"}, tokens={TOKEN_NAME: TOKEN})
# Where the browser tests leave their screenshots (one PNG per page), for a person to look at.
SCREENSHOTS = Path(__file__).resolve().parents[2] / "build" / "console-screenshots"
# The screenshots the docs show, each taken by the browser test named here (through docs_screenshot)
# and written into docs/images/ when ACE_DOCS_SCREENSHOTS=1 (`make docs-screenshots`), else beside
# the other screenshots in build/: a test run leaves the tracked images alone. This list is the
# source of truth tests/docs/test_images.py holds the pages' images against.
DOCS_IMAGES = Path(__file__).resolve().parents[2] / "docs" / "images"
DOCS_SCREENSHOTS = {
    "console-skillbook.png": "tests/console/test_skillbooks_browser.py",
    "console-tenants.png": "tests/console/test_tenants.py",
}
_CSRF = re.compile(r'name="csrf-token" content="([0-9a-f]+)"')


def docs_screenshot(name: str) -> Path:
    """Where a browser test writes the docs' screenshot ``name`` (one of DOCS_SCREENSHOTS):
    docs/images/NAME with ACE_DOCS_SCREENSHOTS=1, else build/console-screenshots/NAME."""
    assert name in DOCS_SCREENSHOTS, f"{name} is not one of the docs' screenshots: {sorted(DOCS_SCREENSHOTS)}"
    folder = DOCS_IMAGES if os.environ.get("ACE_DOCS_SCREENSHOTS") == "1" else SCREENSHOTS
    folder.mkdir(parents=True, exist_ok=True)
    return folder / name


@dataclass
class RunningConsole:
    """A console answering at ``url``, and its app (for its state and routes)."""

    url: str
    app: Any

    def client(
        self, *, auth: tuple[str, str] | None = (USER, PASSWORD), token: str | None = None
    ) -> httpx.Client:
        """An HTTP client of this console: basic ``auth``, or a bearer ``token``, or neither."""
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        return httpx.Client(
            base_url=self.url, auth=auth if token is None else None, headers=headers, timeout=30
        )


@contextmanager
def running_console(
    service: Service, *, access: ConsoleAccess = ACCESS, read_only: bool = False
) -> Iterator[RunningConsole]:
    """The console of ``service``'s fleet on a free loopback port, served until the block ends."""
    app = build_console_app(service, access, host="127.0.0.1", read_only=read_only)
    port = free_port()
    server = uvicorn.Server(
        uvicorn.Config(
            app, host="127.0.0.1", port=port, log_level="warning", access_log=False, lifespan="off"
        )
    )
    thread = threading.Thread(target=server.run, name="console-under-test", daemon=True)
    thread.start()
    try:
        wait_for(lambda: server.started, 15, "the console to listen", every=0.02)
        yield RunningConsole(f"http://127.0.0.1:{port}", app)
    finally:
        server.should_exit = True
        thread.join(timeout=15)


@contextmanager
def console_process(
    command: Sequence[str], env: Mapping[str, str], log: Path, *, cwd: Path | None = None
) -> Iterator[str]:
    """``command`` (an ``ace-workers console``) in a process on a free port; yields its URL.

    Yields once /healthz answers; its output goes to ``log``; it is stopped when the block ends.
    """
    port = free_port()
    with log.open("wb") as out:
        process = subprocess.Popen(
            [*command, "--port", str(port)], env=dict(env), cwd=cwd, stdout=out, stderr=subprocess.STDOUT
        )
    url = f"http://127.0.0.1:{port}"

    def answering() -> bool:
        if process.poll() is not None:
            pytest.fail(f"the console exited with {process.returncode}:\n{log.read_text()}", pytrace=False)
        try:
            return httpx.get(f"{url}/healthz", timeout=2).status_code == 200
        except httpx.HTTPError:
            return False

    try:
        wait_for(answering, 30, "the console to answer /healthz", every=0.1)
        yield url
    finally:
        terminate(process, timeout=10)


def basic_auth_header(user: str = USER, password: str = PASSWORD) -> dict[str, str]:
    """The Authorization header of a basic-auth user, for a browser to send with every request."""
    return {"Authorization": "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()}


def csrf_of(client: httpx.Client, page: str = "/skillbooks") -> str:
    """The CSRF token a page gives this client's user (from its ``<meta name="csrf-token">``)."""
    response = client.get(page)
    assert response.status_code == 200, f"{page}: HTTP {response.status_code}: {response.text[:300]}"
    found = _CSRF.search(response.text)
    assert found is not None, f"{page} carries no csrf-token meta tag"
    return found.group(1)


def post_form(client: httpx.Client, path: str, fields: dict[str, str]) -> httpx.Response:
    """POST a form as a browser does: with the CSRF token of the client's user, no redirect followed."""
    return client.post(path, data={"csrf_token": csrf_of(client), **fields}, follow_redirects=False)


def api_post(client: httpx.Client, path: str, body: dict[str, object]) -> httpx.Response:
    """POST JSON to the API as a signed-in browser user: basic auth needs the CSRF header."""
    return client.post(path, json=body, headers={"X-CSRF-Token": csrf_of(client)})

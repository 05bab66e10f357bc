"""The web console for the tests: served by uvicorn in a thread, and clients that sign in to it.

Every console of the tests has three fleet-wide API keys in its Redis, made when it starts
(:class:`ConsoleKeys`): ``ops`` (admin), whom ``client()`` signs in as by basic auth, as a
person does, ``viewer`` (read), another person, and ``script`` (admin), a script's bearer token.
"""

from __future__ import annotations

import base64
import os
import re
import subprocess
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from ace_workers.console.access import ConsoleAccess
from ace_workers.console.app import build_console_app
from ace_workers.distributed.service import Service
from ace_workers.distributed.tenancy.api_keys import ALL_TENANTS, ApiKeys
from tests.support.processes import terminate
from tests.support.servers import free_port, serving_app
from tests.support.waiting import wait_for

# The user name people type in the browser's sign-in: free, the key's secret is the password.
USER = "ops"
# RunningConsole.client's default: signed in as the ops key (a pair no one signs in with).
_AS_OPS = ("", "")
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


@dataclass(frozen=True)
class TestKey:
    """An API key made for a test: its id and secret; ``name`` is its principal (``key:<id>``),
    what the change log and the audit log record."""

    id: str
    secret: str

    @property
    def name(self) -> str:
        return f"key:{self.id}"


@dataclass(frozen=True)
class ConsoleKeys:
    """The fleet-wide keys every console of the tests is signed in to with."""

    ops: TestKey
    viewer: TestKey
    script: TestKey

    @classmethod
    def make(cls, service: Service) -> ConsoleKeys:
        """Three fresh keys in ``service``'s Redis: ops (admin), viewer (read), script (admin)."""
        keys = ApiKeys(service.runtime.redis, prefix=service.runtime.settings.queue_prefix)
        made = {
            who: keys.create(ALL_TENANTS, role, note=who, actor="user:tests")
            for who, role in (("ops", "admin"), ("viewer", "read"), ("script", "admin"))
        }
        return cls(**{who: TestKey(record.id, secret) for who, (record, secret) in made.items()})


@dataclass
class RunningConsole:
    """A console answering at ``url``, its app (for its state and routes) and the keys it knows."""

    url: str
    app: Any
    keys: ConsoleKeys

    @property
    def ops(self) -> TestKey:
        """The key ``client()`` signs in with, as a person does (basic auth)."""
        return self.keys.ops

    @property
    def token(self) -> str:
        """A script's bearer token: the ``script`` key's secret."""
        return self.keys.script.secret

    def login(self, key: TestKey | None = None) -> tuple[str, str]:
        """The basic-auth pair a person signs in with: a user name, and the key's secret."""
        return (USER, (key or self.keys.ops).secret)

    def basic_auth_header(self, key: TestKey | None = None) -> dict[str, str]:
        """The Authorization header of a signed-in person, for a browser to send with every request."""
        user, password = self.login(key)
        return {"Authorization": "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()}

    def client(self, *, auth: tuple[str, str] | None = _AS_OPS, token: str | None = None) -> httpx.Client:
        """An HTTP client of this console: signed in as ops (basic auth), by the basic ``auth``
        given, by a bearer ``token``, or (``auth=None``) not at all."""
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        login = self.login() if auth is _AS_OPS else auth
        return httpx.Client(
            base_url=self.url, auth=login if token is None else None, headers=headers, timeout=30
        )


@contextmanager
def running_console(
    service: Service, *, access: ConsoleAccess | None = None, read_only: bool = False
) -> Iterator[RunningConsole]:
    """The console of ``service``'s fleet on a free loopback port, served until the block ends.

    It authenticates the fleet's API keys (``access``: another, e.g. ``ConsoleAccess(no_auth=True)``).
    """
    keys = ConsoleKeys.make(service)
    app = build_console_app(service, access or ConsoleAccess(), host="127.0.0.1", read_only=read_only)
    with serving_app(app) as url:
        yield RunningConsole(url, app, keys)


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

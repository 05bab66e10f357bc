"""What the sandbox tests share: a sandbox with short limits, and a listener nothing may reach."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest

from ace_workers.rr import Sandbox
from tests.support.sandbox import LIMITS


@pytest.fixture
def sandbox() -> Sandbox:
    return Sandbox(LIMITS)


@pytest.fixture
def listener() -> Iterator[socket.socket]:
    """A TCP listener on a free loopback port; a test asserts nothing connected to it."""
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    server.setblocking(False)
    yield server
    server.close()

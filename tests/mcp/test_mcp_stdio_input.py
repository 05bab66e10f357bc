"""``ace-workers mcp`` over stdio answers a line that is not JSON-RPC with its error, and serves on."""

from __future__ import annotations

import json
import queue
import subprocess
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.mcp import ACE_WORKERS, INITIALIZE, server_env
from tests.support.processes import terminate

pytestmark = pytest.mark.slow

DEPTH = 100_000
MALFORMED = {
    "garbage": (b"this is not json\n", -32700),
    "invalid-utf8": (b"\xff\xfe\xfd{\n", -32700),
    "a-json-array": (b'[{"jsonrpc": "2.0", "id": 7, "method": "ping"}]\n', -32600),
    "a-number": (b"42\n", -32600),
    "deep-nesting": (b"[" * DEPTH + b"]" * DEPTH + b"\n", -32700),
}


class StdioPeer:
    """Raw lines to a stdio server and its replies, each awaited at most ``timeout`` s."""

    def __init__(self, process: subprocess.Popen[bytes]) -> None:
        self.process = process
        self.replies: queue.Queue[bytes] = queue.Queue()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.replies.put(line)

    def send(self, line: bytes) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(line)
        self.process.stdin.flush()

    def reply(self, timeout: float = 30) -> dict[str, Any]:
        try:
            return dict(json.loads(self.replies.get(timeout=timeout)))
        except queue.Empty:
            pytest.fail(f"no reply within {timeout} s: the client would wait forever", pytrace=False)


@pytest.fixture(scope="module")
def peer(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StdioPeer]:
    """One initialized stdio server for every malformed line: each must leave it serving.

    One server, not one per line: starting one costs over a second of CPU (the SDK's import).
    """
    process = subprocess.Popen(
        [ACE_WORKERS, "mcp"],
        env=server_env(tmp_path_factory.mktemp("stdio")),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    started = StdioPeer(process)
    try:
        started.send(json.dumps(INITIALIZE).encode() + b"\n")
        assert started.reply()["result"]["serverInfo"]["name"] == "ace-workers"
        started.send(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}\n')
        yield started
    finally:
        terminate(process)
        started.reader.join(timeout=30)  # the server exited: its stdout ended, and so did the reader
        for pipe in (process.stdin, process.stdout):
            assert pipe is not None
            pipe.close()


@pytest.mark.parametrize("kind", sorted(MALFORMED))
def test_a_malformed_line_gets_its_json_rpc_error_with_id_null_and_serving_goes_on(
    kind: str, peer: StdioPeer
) -> None:
    line, code = MALFORMED[kind]
    peer.send(line)
    error = peer.reply()
    assert error["id"] is None
    assert error["error"]["code"] == code
    request_id = f"ping-after-{kind}"
    peer.send(json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "ping"}).encode() + b"\n")
    answer = peer.reply()
    assert answer == {"jsonrpc": "2.0", "id": request_id, "result": {}}

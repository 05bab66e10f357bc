"""Helpers shared by the distributed tests: inputs, store operations, processes, hooked clients."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import redis
from redis.client import Pipeline
from redis.cluster import RedisCluster

from ace_workers.core import UpdateBatch, UpdateOperation
from ace_workers.sim import make_tasks

# -- inputs ---------------------------------------------------------------------------------------


ENV_PREFIX = "ACE_"


# -- command output -------------------------------------------------------------------------------


def said(output: str) -> str:
    """The output as one line: rich wraps long lines, and draws a box around usage errors."""
    return " ".join(output.translate(str.maketrans("", "", "│╭╮╰╯─")).split())


def keys_of(client: redis.Redis, prefix: str) -> list[bytes]:
    """The keys under ``prefix`` (kombu's bookkeeping keys left out)."""
    return [key for key in client.scan_iter(match=f"*{prefix}*") if not key.startswith(b"_kombu")]


def write_traces(path: Path, n: int, bad_line_at: int | None = None) -> Path:
    """A JSONL file of ``n`` recorded failures on three topics, a line of bad JSON at ``bad_line_at``."""
    lines = [
        json.dumps(
            {"question": t.question, "answer": "?", "ground_truth": t.ground_truth, "feedback": "Incorrect."}
        )
        for t in make_tasks(n, seed=2, topics=3)
    ]
    if bad_line_at is not None:
        lines.insert(bad_line_at - 1, "{not json")
    path.write_text("\n".join(lines) + "\n")
    return path


# -- store operations -----------------------------------------------------------------------------


def add(content: str, section: str = "general", **fields: Any) -> UpdateOperation:
    return UpdateOperation(type="ADD", section=section, content=content, **fields)


def tag(skill_id: str, **counts: int) -> UpdateOperation:
    return UpdateOperation(type="TAG", skill_id=skill_id, metadata=counts)


def update(skill_id: str, content: str) -> UpdateOperation:
    return UpdateOperation(type="UPDATE", skill_id=skill_id, content=content)


def remove(skill_id: str) -> UpdateOperation:
    return UpdateOperation(type="REMOVE", skill_id=skill_id)


def batch(*operations: UpdateOperation) -> UpdateBatch:
    return UpdateBatch(operations=list(operations))


# -- processes ------------------------------------------------------------------------------------


def stop(process: subprocess.Popen[bytes], sig: int = signal.SIGTERM) -> None:
    """Signal a process group started with start_new_session; SIGKILL it if still there after 30 s."""
    try:
        os.killpg(process.pid, sig)
    except ProcessLookupError:
        return
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=30)


# -- a client that pauses its transactions ---------------------------------------------------------


class _HookedPipeline(Pipeline):
    """A pipeline that calls a hook just before MULTI: after the store's reads, before its writes."""

    before_multi: Callable[[], None] = staticmethod(lambda: None)

    def multi(self) -> None:
        self.before_multi()
        super().multi()


class HookedCluster(RedisCluster):
    """HookedRedis for Redis Cluster: its transactions pause at ``before_multi`` too."""

    before_multi: Callable[[], None] = staticmethod(lambda: None)

    def pipeline(self, transaction: Any = None, shard_hint: Any = None) -> Any:
        pipe = super().pipeline(transaction=transaction, shard_hint=shard_hint)
        multi = pipe.multi

        def hooked_multi() -> None:
            self.before_multi()
            multi()

        pipe.multi = hooked_multi
        return pipe


class HookedRedis(redis.Redis):
    """A client whose transactions pause at ``before_multi``, to force a race at a chosen moment."""

    before_multi: Callable[[], None] = staticmethod(lambda: None)

    def pipeline(self, transaction: bool = True, shard_hint: Any = None) -> Pipeline:
        pipe = _HookedPipeline(self.connection_pool, self.response_callbacks, transaction, shard_hint)
        pipe.before_multi = self.before_multi
        return pipe


# -- recorded agent sessions -------------------------------------------------------------------


def claude_session(path: Path, task: str, tool_output: str = "ok") -> Path:
    """A Claude Code transcript: the task, one Bash call and its output, a wrong answer."""
    session = path.stem
    lines = [
        {
            "type": "user",
            "sessionId": session,
            "uuid": "1",
            "parentUuid": None,
            "message": {"role": "user", "content": task},
        },
        {
            "type": "assistant",
            "sessionId": session,
            "uuid": "2",
            "parentUuid": "1",
            "message": {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "cat"}}],
            },
        },
        {
            "type": "user",
            "sessionId": session,
            "uuid": "3",
            "parentUuid": "2",
            "message": {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "t1", "content": tool_output}],
            },
        },
        {
            "type": "assistant",
            "sessionId": session,
            "uuid": "4",
            "parentUuid": "3",
            "message": {"role": "assistant", "content": "no idea"},
        },
    ]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path

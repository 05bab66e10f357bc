"""One walk through all six tools, shared by every transport and back end."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mcp import Client

from ace_workers.mcp import TOOLS
from ace_workers.sim.tasks import make_tasks

from .clients import call


def samples(n: int, seed: int) -> list[dict[str, Any]]:
    return [
        {"question": s.question, "ground_truth": s.ground_truth} for s in make_tasks(n, seed=seed, topics=1)
    ]


async def exercise_every_tool(
    client: Client, skillbook_dir: Path, *, shared: bool, settle: Callable[[str], None] | None = None
) -> dict[str, Any]:
    """Learn, ask, give feedback, read, save and load; ``shared``: sessions see one skillbook (fleet).

    ``settle`` waits for a queued batch by id (fleet), so later reads see what it learned.
    """
    listed = await client.list_tools()
    assert {tool.name for tool in listed.tools} == set(TOOLS)
    ask_schema = next(tool for tool in listed.tools if tool.name == "ace.ask").input_schema
    assert set(ask_schema["required"]) == {"session_id", "question"}

    learned = await call(client, "ace.learn.sample", {"session_id": "alice", "samples": samples(4, seed=3)})
    assert (learned["processed"], learned["failed"], learned["queued"]) == (4, 0, 4)
    assert learned["skill_count_after"] > learned["skill_count_before"]

    task = make_tasks(1, seed=41, topics=1)[0]
    asked = await call(client, "ace.ask", {"session_id": "alice", "question": task.question})
    assert asked["skill_count"] == learned["skill_count_after"]
    assert asked["answer"]

    feedback = await call(
        client,
        "ace.learn.feedback",
        {"session_id": "alice", "feedback": "that was wrong", "ground_truth": "not " + asked["answer"]},
    )
    if shared:
        assert (feedback["learned"], feedback["queued"]) == (False, True)
        assert settle is not None and feedback["batch_id"]
        settle(feedback["batch_id"])
    else:
        assert (feedback["learned"], feedback["queued"]) == (True, False)

    got = await call(client, "ace.skillbook.get", {"session_id": "alice", "limit": 100})
    assert got["stats"]["skills"] == len(got["skills"]) >= learned["skill_count_after"]
    assert all(skill["content"] for skill in got["skills"])

    saved = await call(client, "ace.skillbook.save", {"session_id": "alice", "path": "team.json"})
    written = json.loads((skillbook_dir / "team.json").read_text())
    assert saved["saved_skill_count"] == len(written["skills"]) >= learned["skill_count_after"]

    fresh = await call(client, "ace.skillbook.get", {"session_id": "bob"})
    assert fresh["stats"]["skills"] == (got["stats"]["skills"] if shared else 0)

    loaded = await call(client, "ace.skillbook.load", {"session_id": "bob", "path": "team.json"})
    assert loaded["skill_count"] == saved["saved_skill_count"]
    after_load = await call(client, "ace.skillbook.get", {"session_id": "bob", "limit": 100})
    assert {s["content"] for s in after_load["skills"]} == {s["content"] for s in got["skills"]}
    return {"learned": learned, "feedback": feedback, "got": got, "loaded": loaded}

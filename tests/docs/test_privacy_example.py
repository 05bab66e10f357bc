"""The privacy page's forget session runs as printed: alice forgotten, her skill archived, bob's kept."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.docs import run_shell_example, runnable_blocks

(FORGET_SCRIPT,) = runnable_blocks("docs/privacy.md", "## Forget a person", language="sh")


@pytest.mark.slow
def test_the_forget_example_erases_alice_archives_her_skill_and_says_so_the_second_time(
    tmp_path: Path,
) -> None:
    done = run_shell_example(FORGET_SCRIPT, tmp_path)

    assert done.returncode == 0, f"the forget example failed:\n{done.stdout}\n{done.stderr}"
    lines = done.stdout.splitlines()
    assert "subject metadata.user_id=alice: 1 sample matched; would erase 5 records" in lines
    # Skill ids count across sections: which of the two traces applied first decides flux's number.
    listed = [
        line for line in lines if line.startswith("  skillbook support: 1 skill learned only from these: ")
    ]
    assert [line.split(": ")[-1].split("-")[0] for line in listed] == ["flux"]
    flux = listed[0].split(": ")[-1]
    assert f"  skillbook support: 1 skill archived: {flux} (version 3)" in lines
    assert any(
        line.startswith("nothing matched subject metadata.user_id=alice: nothing to erase") for line in lines
    )
    archived = [line for line in lines if line.startswith(f"│ {flux}")]
    assert len(archived) == 1
    assert "zorb-0000" not in done.stdout.split("nothing matched")[1]  # bob's skill is not archived

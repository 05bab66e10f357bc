"""``ace-workers backup`` and ``restore`` as a person runs them: what they print, one line per refusal."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import redis

from ace_workers.core import Skillbook
from ace_workers.distributed.store.store import RedisSkillbookStore, list_skillbooks
from tests.support.backups import raw_state
from tests.support.cli import Ran, env_with_one_skillbook, run_console_script
from tests.support.docs import run_shell_example, runnable_blocks
from tests.support.schema0 import stamp_current_schema

PREFIX = "clibackup"
(DOCS_EXAMPLE,) = runnable_blocks("docs/operations.md", "## Backup and restore", language="sh")

Ace = Callable[..., Ran]


@pytest.fixture
def ace(
    clean_env: pytest.MonkeyPatch,
    redis_url: str,
    redis_client: redis.Redis,
    capsys: pytest.CaptureFixture[str],
) -> Ace:
    """``ace-workers ...`` as its console script runs, on a Redis where skillbook "book" has one skill."""
    env = env_with_one_skillbook(clean_env, redis_url, redis_client, PREFIX)
    return lambda *args: run_console_script(env, capsys, *args)


def one_line(ran: Ran, code: int) -> str:
    assert ran.code == code, ran
    assert ran.err.count("\n") == 1, ran.err
    return ran.err


def test_backup_then_restore_under_another_prefix_copies_every_key(
    ace: Ace, clean_env: pytest.MonkeyPatch, redis_client: redis.Redis, tmp_path: Path
) -> None:
    backed = ace("backup", "--out", str(tmp_path / "bk"))
    assert backed.code == 0, backed
    written = f"backup of prefix {PREFIX!r} written to {tmp_path / 'bk'}"
    assert backed.out == f"{written}: 1 skillbook, 0 tenants, 0 API keys (schema 2)\n"
    assert backed.err == "skillbook book: version 1, 6 keys\n"
    restored = ace("restore", "--from", str(tmp_path / "bk"), "--prefix", "copy")
    assert restored.code == 0, restored
    assert restored.out.startswith(f"restored 1 skillbook from {tmp_path / 'bk'} into Redis at ")
    assert restored.out.endswith(" under prefix 'copy'\n")
    assert raw_state(redis_client, "copy") == raw_state(redis_client, PREFIX)
    clean_env.setenv("ACE_QUEUE_PREFIX", "copy")
    shown = ace("skillbook", "show", "book")
    assert shown.code == 0, shown
    assert "Check units before answering." in shown.out


def test_restore_into_a_prefix_holding_data_is_one_line_and_exit_4(
    ace: Ace, redis_client: redis.Redis, tmp_path: Path
) -> None:
    ace("backup", "--out", str(tmp_path / "bk"))
    before = raw_state(redis_client, PREFIX)
    line = one_line(ace("restore", "--from", str(tmp_path / "bk")), 4)
    assert f"already holds data under prefix {PREFIX!r} (e.g. key '{PREFIX}:" in line
    assert "pass --merge" in line
    assert raw_state(redis_client, PREFIX) == before


def test_a_corrupt_manifest_is_one_line_naming_the_file_and_line(ace: Ace, tmp_path: Path) -> None:
    ace("backup", "--out", str(tmp_path / "bk"))
    manifest = tmp_path / "bk" / "manifest.json"
    manifest.write_text(manifest.read_text()[:40])
    line = one_line(ace("restore", "--from", str(tmp_path / "bk"), "--prefix", "copy"), 2)
    assert line.startswith(f"error: backup {manifest} line 3: not JSON (")
    assert line.endswith("nothing was restored\n")


def test_a_backup_of_another_schema_names_migrate(ace: Ace, tmp_path: Path) -> None:
    ace("backup", "--out", str(tmp_path / "bk"))
    manifest = tmp_path / "bk" / "manifest.json"
    manifest.write_text(manifest.read_text().replace('"schema_version": 2', '"schema_version": 1'))
    line = one_line(ace("restore", "--from", str(tmp_path / "bk"), "--prefix", "copy"), 2)
    assert "holds schema 1, this ace-workers knows schema 2" in line
    assert "`ace-workers migrate`" in line


def test_an_out_folder_holding_files_is_refused(ace: Ace, tmp_path: Path) -> None:
    (tmp_path / "bk").mkdir()
    (tmp_path / "bk" / "keep.txt").write_text("mine")
    line = one_line(ace("backup", "--out", str(tmp_path / "bk")), 2)
    assert line == f"error: backup folder {tmp_path / 'bk'} exists and is not empty: name a new folder\n"
    assert not (tmp_path / "bk.partial").exists()


@pytest.mark.slow
def test_the_docs_example_backs_up_restores_and_refuses_a_full_target(tmp_path: Path) -> None:
    done = run_shell_example(DOCS_EXAMPLE, tmp_path)
    assert done.returncode == 0, f"the backup example failed:\n{done.stdout}\n{done.stderr}"
    assert "backup of prefix 'ace' written to backup-1: 1 skillbook, 0 tenants, 0 API keys" in done.stdout
    assert "restored 1 skillbook from backup-1 into Redis at " in done.stdout
    assert "│ prod  │ 2       │" in done.stdout
    assert "refused: exit 4" in done.stdout
    assert "skillbook support: version 2, " in done.stderr


def test_merge_adds_to_a_prefix_holding_data_and_refuses_a_skillbook_it_has(
    ace: Ace, redis_client: redis.Redis, tmp_path: Path
) -> None:
    ace("backup", "--out", str(tmp_path / "bk"))
    local = Skillbook()
    local.add_skill("general", "Mine.")
    RedisSkillbookStore(redis_client, "local", prefix="copy").import_skillbook(local)
    stamp_current_schema(redis_client, "copy")  # as the process that wrote it would have
    merged = ace("restore", "--from", str(tmp_path / "bk"), "--prefix", "copy", "--merge")
    assert merged.code == 0, merged
    assert merged.out.endswith(" under prefix 'copy' (merged)\n")
    assert list_skillbooks(redis_client, "copy") == ["book", "local"]
    line = one_line(ace("restore", "--from", str(tmp_path / "bk"), "--prefix", "copy", "--merge"), 4)
    assert line == (
        "error: the target already has skillbook 'book': --merge adds only skillbooks the target lacks "
        "(delete or rename them first)\n"
    )


def test_a_prefix_that_cannot_start_key_names_is_refused(ace: Ace, tmp_path: Path) -> None:
    ran = ace("restore", "--from", str(tmp_path), "--prefix", "{bad}")
    assert ran.code == 2, ran
    assert "--prefix" in ran.err

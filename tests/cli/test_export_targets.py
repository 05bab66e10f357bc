"""``skillbook export`` writes only regular files: a FIFO, a device or a link to one is refused, untouched."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
import redis
from typer.testing import CliRunner

from ace_workers.cli import app
from ace_workers.core import write_text_atomically
from ace_workers.errors import NotARegularFileError
from tests.support.cli import env_with_one_skillbook, said

PREFIX = "cliexport"


@pytest.fixture
def env(clean_env: pytest.MonkeyPatch, redis_url: str, redis_client: redis.Redis) -> pytest.MonkeyPatch:
    return env_with_one_skillbook(clean_env, redis_url, redis_client, PREFIX)


def export(out: str, *more: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["skillbook", "export", "book", "--out", out, *more])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, said(result.output)


def test_export_to_a_fifo_is_refused_naming_it_and_the_fifo_stays(env: pytest.MonkeyPatch) -> None:
    os.mkfifo("pipe")
    code, output = export("pipe")
    assert code == 2
    assert "pipe is a FIFO, not a regular file" in output
    assert stat.S_ISFIFO(os.lstat("pipe").st_mode)


def test_export_to_a_link_to_a_character_device_is_refused_and_the_link_stays(
    env: pytest.MonkeyPatch,
) -> None:
    # A link, so that even a broken check replaces the link, never the device itself.
    Path("null.json").symlink_to("/dev/null")
    code, output = export("null.json")
    assert code == 2
    assert "null.json is a character device, not a regular file" in output
    assert os.readlink("null.json") == "/dev/null"


def test_export_to_dev_null_is_refused_and_dev_null_is_left_alone(env: pytest.MonkeyPatch) -> None:
    before = os.stat("/dev/null")
    code, output = export("/dev/null")
    assert code == 2
    assert "/dev/null is a character device, not a regular file" in output
    assert os.stat("/dev/null").st_ino == before.st_ino


def test_markdown_to_a_fifo_is_refused_before_the_json_is_written(env: pytest.MonkeyPatch) -> None:
    os.mkfifo("pipe.md")
    code, output = export("book.json", "--markdown", "pipe.md")
    assert code == 2
    assert "pipe.md is a FIFO, not a regular file" in output
    assert not Path("book.json").exists()


def test_a_fifo_made_after_the_check_is_still_never_replaced(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "late")
    with pytest.raises(NotARegularFileError, match="late is a FIFO, not a regular file"):
        write_text_atomically(tmp_path / "late", "{}")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["late"]  # no temp file left


def test_a_regular_file_is_still_replaced_atomically(env: pytest.MonkeyPatch) -> None:
    Path("book.json").write_text("the old file")
    code, output = export("book.json")
    assert code == 0, output
    assert "Check units before answering." in Path("book.json").read_text()

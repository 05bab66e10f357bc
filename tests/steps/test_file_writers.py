"""CheckpointStep, PersistStep and ExportSkillbookMarkdownStep: the files, and atomic writes."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from ace_workers.core import ACEStepContext, Skillbook
from ace_workers.steps import CheckpointStep, ExportSkillbookMarkdownStep, PersistStep

MakeCtx = Callable[..., ACEStepContext]


def _skill_ids(path: Path) -> list[str]:
    return sorted(json.loads(path.read_text(encoding="utf-8"))["skills"])


def _fail(*args: object, **kwargs: object) -> str:
    raise RuntimeError("disk on fire")


@pytest.mark.parametrize(
    ("interval", "expected"),
    [
        (1, [1, 2, 3, 4, 5, 6, 7]),
        (3, [3, 6]),
        (5, [5]),
        (10, []),
    ],
)
def test_checkpoint_file_names_follow_the_interval(
    make_ctx: MakeCtx, skillbook: Skillbook, tmp_path: Path, interval: int, expected: list[int]
) -> None:
    directory = tmp_path / "ckpt"
    step = CheckpointStep(directory, skillbook, interval=interval)
    for index in range(1, 8):
        step(make_ctx(global_sample_index=index))
    if not expected:
        assert not directory.exists()
        return
    wanted = {f"checkpoint_{i}.json" for i in expected} | {"latest.json"}
    assert {p.name for p in directory.iterdir()} == wanted


def test_checkpoint_latest_tracks_the_newest_checkpoint(
    make_ctx: MakeCtx, skillbook: Skillbook, tmp_path: Path
) -> None:
    step = CheckpointStep(tmp_path, skillbook, interval=2)
    step(make_ctx(global_sample_index=2))
    skillbook.add_skill("checks", "Re-add the digits.")
    step(make_ctx(global_sample_index=3))  # not a multiple: nothing written
    assert _skill_ids(tmp_path / "latest.json") == ["math-00001"]
    step(make_ctx(global_sample_index=4))
    assert _skill_ids(tmp_path / "checkpoint_2.json") == ["math-00001"]
    assert _skill_ids(tmp_path / "checkpoint_4.json") == _skill_ids(tmp_path / "latest.json")
    assert len(_skill_ids(tmp_path / "latest.json")) == 2
    restored = Skillbook.load_from_file(tmp_path / "latest.json")
    assert restored.to_dict() == skillbook.to_dict()


def test_checkpoint_rejects_an_empty_directory(skillbook: Skillbook) -> None:
    with pytest.raises(ValueError, match="directory"):
        CheckpointStep("", skillbook)


def test_checkpoint_write_failure_leaves_the_previous_files_intact(
    make_ctx: MakeCtx, skillbook: Skillbook, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    step = CheckpointStep(tmp_path, skillbook, interval=1)
    step(make_ctx(global_sample_index=1))
    before = (tmp_path / "latest.json").read_bytes()
    skillbook.add_skill("checks", "Re-add the digits.")
    monkeypatch.setattr(Skillbook, "dumps", _fail)
    with pytest.raises(RuntimeError, match="disk on fire"):
        step(make_ctx(global_sample_index=2))
    assert (tmp_path / "latest.json").read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["checkpoint_1.json", "latest.json"]


def test_persist_step_failing_mid_write_leaves_no_temp_file_and_the_old_file(
    make_ctx: MakeCtx, skillbook: Skillbook, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "skillbook.json"
    step = PersistStep(target, skillbook)
    step(make_ctx())
    before = target.read_bytes()
    skillbook.add_skill("checks", "Re-add the digits.")
    # Fail after the temporary file is written, just before it would replace the target.
    monkeypatch.setattr(os, "replace", _fail)
    with pytest.raises(RuntimeError, match="disk on fire"):
        step(make_ctx())
    monkeypatch.undo()
    assert target.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["skillbook.json"]


def test_persist_step_writes_json_every_sample(
    make_ctx: MakeCtx, skillbook: Skillbook, tmp_path: Path
) -> None:
    target = tmp_path / "nested" / "skillbook.json"
    step = PersistStep(target, skillbook)
    step(make_ctx(global_sample_index=1))
    assert _skill_ids(target) == ["math-00001"]
    skillbook.add_skill("checks", "Re-add the digits.")
    step(make_ctx(global_sample_index=2))
    assert Skillbook.load_from_file(target).to_dict() == skillbook.to_dict()
    assert [p.name for p in target.parent.iterdir()] == ["skillbook.json"]


def test_persist_step_with_a_renderer_writes_its_text(
    make_ctx: MakeCtx, skillbook: Skillbook, tmp_path: Path
) -> None:
    target = tmp_path / "CLAUDE.md"
    PersistStep(target, skillbook, render=lambda book: f"# Learned\n\n{book.as_prompt()}\n")(make_ctx())
    assert target.read_text(encoding="utf-8") == f"# Learned\n\n{skillbook.as_prompt()}\n"
    assert "math-00001" in target.read_text(encoding="utf-8")


def test_persist_step_rejects_a_renderer_that_is_not_callable(skillbook: Skillbook, tmp_path: Path) -> None:
    with pytest.raises(TypeError, match="render"):
        PersistStep(tmp_path / "x", skillbook, render="markdown")  # type: ignore[arg-type]


def test_export_markdown_rewrites_the_file_from_the_skillbook(
    make_ctx: MakeCtx, skillbook: Skillbook, tmp_path: Path
) -> None:
    target = tmp_path / "SKILLBOOK.md"
    target.write_text("stale content that must go\n", encoding="utf-8")
    step = ExportSkillbookMarkdownStep(target, skillbook)
    step(make_ctx())
    assert target.read_text(encoding="utf-8") == skillbook.as_markdown()
    skillbook.add_skill("checks", "Re-add the digits.")
    step(make_ctx())
    text = target.read_text(encoding="utf-8")
    assert text == skillbook.as_markdown()
    assert "## checks" in text
    assert "stale" not in text
    assert [p.name for p in tmp_path.iterdir()] == ["SKILLBOOK.md"]


def test_export_markdown_failure_keeps_the_previous_file(
    make_ctx: MakeCtx, skillbook: Skillbook, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "SKILLBOOK.md"
    step = ExportSkillbookMarkdownStep(target, skillbook)
    step(make_ctx())
    before = target.read_text(encoding="utf-8")
    monkeypatch.setattr(os, "fsync", _fail)
    with pytest.raises(RuntimeError):
        step(make_ctx())
    monkeypatch.undo()
    assert target.read_text(encoding="utf-8") == before
    assert [p.name for p in tmp_path.iterdir()] == ["SKILLBOOK.md"]

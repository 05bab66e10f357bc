"""CHANGELOG.md is in Keep a Changelog form and has an entry for the version being released."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RELEASE = re.compile(r"^## \[(?P<version>\d+\.\d+\.\d+)\] - (?P<date>\d{4}-\d{2}-\d{2})$")
SECTIONS = {"### Added", "### Changed", "### Deprecated", "### Removed", "### Fixed", "### Security"}


def _releases() -> list[tuple[int, ...]]:
    lines = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8").splitlines()
    return [
        tuple(int(part) for part in found["version"].split("."))
        for line in lines
        if (found := RELEASE.match(line))
    ]


def test_the_changelog_starts_with_unreleased_then_the_package_version() -> None:
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    headings = [line for line in (ROOT / "CHANGELOG.md").read_text().splitlines() if line.startswith("## ")]
    assert headings[0] == "## [Unreleased]"
    assert headings[1].startswith(f"## [{version}] - "), f"CHANGELOG.md has no entry for {version} on top"


def test_every_release_heading_is_semver_with_a_date_newest_first() -> None:
    lines = (ROOT / "CHANGELOG.md").read_text().splitlines()
    releases = [line for line in lines if line.startswith("## ") and line != "## [Unreleased]"]
    assert [line for line in releases if not RELEASE.match(line)] == []
    assert _releases() == sorted(_releases(), reverse=True)


def test_changes_are_grouped_under_the_kinds_keep_a_changelog_names() -> None:
    kinds = {line for line in (ROOT / "CHANGELOG.md").read_text().splitlines() if line.startswith("### ")}
    assert kinds <= SECTIONS, kinds - SECTIONS

"""The README stays a front page: short, and its links into the docs lead to pages that exist."""

from __future__ import annotations

import re
import tomllib

from tests.support.docs import ROOT, page_text

# README.md holds what it is, how to set it up, two quick starts and links into the docs site.
README_MAX_LINES = 200


def test_the_readme_is_at_most_200_lines() -> None:
    lines = page_text("README.md").splitlines()
    assert len(lines) <= README_MAX_LINES, f"README.md has {len(lines)} lines"


def test_the_readmes_relative_links_lead_to_files_of_the_repository() -> None:
    targets = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", page_text("README.md"))
    relative = [target for target in targets if "://" not in target]
    assert relative, "README.md links to no page of the docs"
    missing = [target for target in relative if not (ROOT / target).is_file()]
    assert missing == []


def test_the_readme_links_to_every_guide_page() -> None:
    linked = set(re.findall(r"\]\((docs/[^)#\s]+\.md)", page_text("README.md")))
    guides = {
        path.relative_to(ROOT).as_posix()
        for path in (ROOT / "docs").rglob("*.md")
        if path.parent.name != "reference" and path.name != "index.md"
    }
    assert guides - linked == set()


def test_the_install_commands_name_the_version_being_released() -> None:
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    wheels = re.findall(r"ace_workers-([\w.]+)-py3-none-any\.whl", page_text("docs/getting-started.md"))
    assert wheels, "docs/getting-started.md shows no wheel to install"
    assert set(wheels) == {version}

"""The sdist and the wheel hold every file of the packages: the modules and every file the code reads
(Lua scripts, console templates and static files, the sample data, py.typed)."""

from __future__ import annotations

import pytest

from tests.support.packaging import (
    PACKAGES,
    Distributions,
    package_data_files,
    project_version,
    tracked_files,
)

pytestmark = pytest.mark.slow


def _in_packages(names: set[str]) -> set[str]:
    return {name for name in names if name.split("/")[0] in PACKAGES and "/__pycache__/" not in name}


def test_the_tree_has_the_kinds_of_data_files_the_code_reads() -> None:
    # Guards the comparisons below against an empty list (a git ls-files that found nothing).
    data = package_data_files()
    for suffix in (".lua", ".html", ".css", ".js", ".jsonl", "py.typed"):
        assert any(name.endswith(suffix) for name in data), suffix
    assert any(name.startswith("ace_workers/console/templates/batches/") for name in data)


def test_the_wheel_holds_every_data_file_of_the_tree_and_nothing_else(distributions: Distributions) -> None:
    shipped = {name for name in _in_packages(distributions.wheel_files()) if not name.endswith(".py")}
    assert sorted(shipped) == package_data_files()


def test_the_wheel_holds_every_module_of_the_tree(distributions: Distributions) -> None:
    modules = [name for name in tracked_files(*PACKAGES) if name.endswith(".py")]
    assert sorted(name for name in distributions.wheel_files() if name.endswith(".py")) == modules


def test_the_sdist_holds_every_file_of_the_packages(distributions: Distributions) -> None:
    held = _in_packages(distributions.sdist_files())
    assert sorted(set(tracked_files(*PACKAGES)) - held) == []


def test_the_sdist_holds_what_a_build_reads(distributions: Distributions) -> None:
    assert {"pyproject.toml", "README.md", "PKG-INFO"} <= distributions.sdist_files()


def test_the_distributions_carry_the_version_of_pyproject(distributions: Distributions) -> None:
    version = project_version()
    assert distributions.wheel.name.startswith(f"ace_workers-{version}-")
    assert distributions.sdist.name == f"ace_workers-{version}.tar.gz"

"""Every path the xdist scheduler groups by names tests that exist: a stale one groups nothing, silently."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.support.scheduling import SHARED_FIXTURE_PATHS

ROOT = Path(__file__).resolve().parents[2]


def functions_in(path: Path) -> list[str]:
    tree = ast.parse(path.read_text())
    return [node.name for node in tree.body if isinstance(node, ast.FunctionDef)]


@pytest.mark.parametrize("entry", sorted(SHARED_FIXTURE_PATHS))
def test_a_shared_fixture_path_names_a_test_file_or_test(entry: str) -> None:
    path, _, name = entry.partition("::")
    target = ROOT / path
    assert target.exists(), f"{path} does not exist"
    if name:
        names = functions_in(target)
        assert any(function.startswith(name.split("[")[0]) for function in names), f"no test {name} in {path}"

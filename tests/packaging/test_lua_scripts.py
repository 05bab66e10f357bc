"""Every Lua script of the project is read one way, by ``read_lua`` (ace_workers/distributed/lua.py).

Three ways once existed, two of them by path beside ``__file__``; a script missing from the wheel
then failed only where it was installed. These tests read the source, so a second way fails here.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from ace_workers.distributed.lua import read_lua
from tests.support.packaging import PACKAGES
from tests.support.processes import REPO

LOADER = REPO / "ace_workers" / "distributed" / "lua.py"
# A string that names a Lua file, or a pattern or suffix of one ("*.lua", ".lua").
LUA_NAME = re.compile(r"^[\w./*{}-]*\.lua$")
DISTRIBUTED = REPO / "ace_workers" / "distributed"


def _called_name(call: ast.Call) -> str:
    func = call.func
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""


def _loaders(tree: ast.AST) -> set[str]:
    """``read_lua``, and the module's own functions that call it (e.g. one that adds a shared library)."""
    found = {"read_lua"}
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and any(
            isinstance(inner, ast.Call) and _called_name(inner) == "read_lua" for inner in ast.walk(node)
        ):
            found.add(node.name)
    return found


def lua_names_read_by_the_loader(source: str) -> set[str]:
    """The Lua file names ``source`` hands to ``read_lua`` (directly or through its own helper)."""
    tree = ast.parse(source)
    loaders = _loaders(tree)
    return {
        arg.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and _called_name(node) in loaders
        for arg in node.args
        if isinstance(arg, ast.Constant) and isinstance(arg.value, str) and LUA_NAME.match(arg.value)
    }


def lua_names_outside_the_loader(source: str) -> list[int]:
    """The lines of ``source`` that name a Lua file anywhere but as an argument of ``read_lua``."""
    tree = ast.parse(source)
    loaders = _loaders(tree)
    allowed = {
        id(arg) for node in ast.walk(tree) if isinstance(node, ast.Call) and _called_name(node) in loaders
        for arg in node.args
    }  # fmt: skip
    return sorted(
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and LUA_NAME.match(node.value)
        and id(node) not in allowed
    )


def _modules() -> list[Path]:
    return sorted(path for package in PACKAGES for path in (REPO / package).rglob("*.py") if path != LOADER)


def test_no_module_names_a_lua_file_but_to_read_it_with_read_lua() -> None:
    offenders = [
        f"{path.relative_to(REPO)}:{line}"
        for path in _modules()
        for line in lua_names_outside_the_loader(path.read_text(encoding="utf-8"))
    ]
    assert offenders == []


def test_no_module_of_distributed_finds_files_by_its_own_path() -> None:
    # Where the scripts live: a path built from __file__ is how the scripts were read before.
    offenders = [
        str(path.relative_to(REPO))
        for path in sorted(DISTRIBUTED.rglob("*.py"))
        if path != LOADER and "__file__" in path.read_text(encoding="utf-8")
    ]
    assert offenders == []


def test_every_lua_script_of_the_tree_is_read_by_a_module_beside_it() -> None:
    scripts = sorted(path for package in PACKAGES for path in (REPO / package).rglob("*.lua"))
    assert scripts, "no Lua script found: the check would pass on nothing"
    unread = []
    for script in scripts:
        beside = script.parent.glob("*.py")
        read = set().union(
            *(lua_names_read_by_the_loader(path.read_text(encoding="utf-8")) for path in beside)
        )
        if script.name not in read:
            unread.append(str(script.relative_to(REPO)))
    assert unread == []


def test_the_check_finds_the_other_ways_of_reading_a_script() -> None:
    planted = (
        "from pathlib import Path\n"
        'A = (Path(__file__).parent / "park.lua").read_text()\n'
        'B = open("scripts/claim.lua").read()\n'
        'C = [p.read_text() for p in Path(".").glob("*.lua")]\n'
        'D = f"{name}.lua"\n'
    )
    assert lua_names_outside_the_loader(planted) == [2, 3, 4, 5]


def test_the_check_accepts_read_lua_and_a_helper_that_calls_it() -> None:
    source = (
        'A = read_lua(__name__, "count_step.lua", "finish_sample.lua")\n'
        "def _admission(name):\n"
        '    return read_lua(__name__, "state.lua", name)\n'
        'B = _admission("admit.lua")\n'
    )
    assert lua_names_outside_the_loader(source) == []
    assert lua_names_read_by_the_loader(source) == {
        "count_step.lua",
        "finish_sample.lua",
        "state.lua",
        "admit.lua",
    }


def test_read_lua_reads_the_scripts_beside_the_module_in_order() -> None:
    store = DISTRIBUTED / "store"
    first, second = (store / "count_step.lua").read_text(), (store / "finish_sample.lua").read_text()
    assert read_lua("ace_workers.distributed.store.batches", "count_step.lua", "finish_sample.lua") == (
        first + "\n" + second
    )


def test_a_missing_script_is_named_with_its_package() -> None:
    with pytest.raises(
        FileNotFoundError, match=r"no_such\.lua of ace_workers\.distributed\.store is not installed"
    ):
        read_lua("ace_workers.distributed.store.batches", "no_such.lua")

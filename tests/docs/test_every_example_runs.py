"""Every runnable block of the docs is run by some test.

A ```python or ```sh block of README.md or docs/**/*.md must be run by a test, which takes it
through tests.support.docs.runnable_blocks when its module is imported. This test imports every
test module that does, gathers the blocks they took, and fails naming each runnable block of every
page that no test took. A block that cannot run offline is fenced in another language (see
tests/support/docs.py), never in an alias of a runnable one.
"""

from __future__ import annotations

import importlib
import re

from tests.support.docs import ROOT, RUNNABLE, RUNNABLE_ALIASES, every_block, taken_blocks

TESTS = ROOT / "tests"
# An import of the functions that take blocks to run, on one line or wrapped in parentheses.
TAKES_BLOCKS = re.compile(r"from tests\.support\.docs import \(?[^)]*?\b(?:runnable_blocks|examples)\b", re.S)


def modules_running_blocks() -> list[str]:
    """The test modules that take blocks to run, as importable names (tests.docs.test_examples)."""
    found = []
    for path in sorted(TESTS.rglob("test_*.py")):
        if TAKES_BLOCKS.search(path.read_text(encoding="utf-8")):
            found.append(".".join(path.relative_to(ROOT).with_suffix("").parts))
    return found


def test_the_modules_that_run_blocks_are_found() -> None:
    modules = modules_running_blocks()
    assert "tests.docs.test_examples" in modules
    assert "tests.integrations.langchain.test_fleet" in modules


def test_every_python_and_sh_block_of_the_docs_is_run_by_a_test() -> None:
    for module in modules_running_blocks():
        importlib.import_module(module)
    taken = taken_blocks()
    not_run = [
        f"{block.page} under {block.heading!r}: ```{block.language} block starting {block.code[:60]!r}"
        for block in every_block()
        if block.language in RUNNABLE and (block.page, block.code) not in taken
    ]
    assert not_run == [], "runnable blocks no test runs:\n" + "\n".join(not_run)


def test_no_block_is_fenced_in_an_alias_of_a_runnable_language() -> None:
    blocks = every_block()
    aliased = [f"{b.page} {b.heading!r}: {b.language}" for b in blocks if b.language in RUNNABLE_ALIASES]
    assert aliased == []


def test_the_docs_have_runnable_blocks_in_both_languages() -> None:
    languages = {block.language for block in every_block()}
    assert set(RUNNABLE) <= languages

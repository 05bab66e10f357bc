"""Tests wait through ``tests.support.waiting.wait_for``, never a hand-written clock-deadline loop."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
WAITING = TESTS / "support" / "waiting.py"  # the one polling loop
CLOCKS = {("time", "monotonic"), ("time", "time")}

Loop = ast.While | ast.For | ast.AsyncFor
Scope = ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | ast.ClassDef


def is_clock_call(node: ast.AST) -> bool:
    """``time.monotonic()`` or ``time.time()``."""
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and isinstance(node.func.value, ast.Name)
        and (node.func.value.id, node.func.attr) in CLOCKS
    )


def reads_clock(node: ast.AST) -> bool:
    return any(is_clock_call(inner) for inner in ast.walk(node))


def runs_for_a_duration(loop: ast.AST) -> bool:
    """``while time.monotonic() < until:`` with no other way out: time passing on purpose, not a wait.

    (A drill keeps Redis full for a number of seconds, say.) A loop that also ends on a
    condition, in its test or by break, return, raise or assert in its body, waits for it.
    """
    if not (isinstance(loop, ast.While) and isinstance(loop.test, ast.Compare)):
        return False
    if not (is_clock_call(loop.test.left) and len(loop.test.ops) == 1):
        return False
    exits = (ast.Break, ast.Return, ast.Raise, ast.Assert)
    return not any(isinstance(node, exits) for statement in loop.body for node in ast.walk(statement))


def deadline_loops(source: str) -> list[int]:
    """Lines of the loops in ``source`` that compare a clock reading inside them: hand-written waits.

    A comparison counts for its innermost loop in the same function; one in a function defined
    inside a loop (the check handed to ``wait_for``) does not count for that loop.
    """
    found: set[int] = set()

    def visit(node: ast.AST, loop: ast.AST | None) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, Scope):
                visit(child, None)
            elif isinstance(child, Loop):
                visit(child, child)
            elif isinstance(child, ast.Compare) and loop is not None and reads_clock(child):
                if not runs_for_a_duration(loop):
                    found.add(loop.lineno)
            else:
                visit(child, loop)

    visit(ast.parse(source), None)
    return sorted(found)


def test_no_test_module_waits_in_a_loop_of_its_own() -> None:
    offenders = [
        f"{path.relative_to(TESTS.parent)}:{line}"
        for path in sorted(TESTS.rglob("*.py"))
        if path != WAITING
        for line in deadline_loops(path.read_text(encoding="utf-8"))
    ]
    assert offenders == [], (
        "hand-written clock-deadline loops (poll with tests.support.waiting.wait_for instead): "
        + ", ".join(offenders)
    )


def test_the_scan_finds_a_planted_deadline_loop_and_passes_what_is_not_one() -> None:
    planted = textwrap.dedent(
        """
        import time

        def waits(ready):
            deadline = time.monotonic() + 10
            while not ready():
                assert time.monotonic() < deadline
                time.sleep(0.1)

        def waits_in_the_test(ready):
            deadline = time.monotonic() + 10
            while not ready() and time.monotonic() < deadline:
                time.sleep(0.1)

        def measures(run):
            started = time.monotonic()
            for step in run:
                step()
            assert time.monotonic() - started < 5

        def keeps_busy(work):
            until = time.monotonic() + 2
            while time.monotonic() < until:
                work()

        def hands_a_check_to_wait_for(items, wait_for):
            for item in items:
                def ready():
                    return time.monotonic() > item
                wait_for(ready, 10, "the item")
        """
    )
    assert deadline_loops(planted) == [6, 12]

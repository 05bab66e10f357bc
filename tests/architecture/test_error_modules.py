"""Every exception class is defined in an ``errors.py``, so a package's errors are read in one place.

Found by parsing, not importing: a class is an exception when one of its bases is a built-in
exception, a library exception the project subclasses, or a class already found to be one (by
name, across the whole package, until nothing new is found).
"""

from __future__ import annotations

import ast
import builtins
from collections.abc import Iterable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("ace_workers", "pipeline")

BUILTIN_EXCEPTIONS = {
    name
    for name, value in vars(builtins).items()
    if isinstance(value, type) and issubclass(value, BaseException)
}
# Library exceptions a project class might subclass; named here since parsing cannot resolve imports.
LIBRARY_EXCEPTIONS = {"WatchError", "RedisError", "HTTPException", "ClickException", "BadParameter"}
# Modules that cannot import an errors module: the sandbox's child runs as a standalone script
# (``python -I -S``, standard library only), and FINAL ends its user code with its own BaseException.
STANDALONE = {"ace_workers/rr/sandbox_child.py": {"FinalCalled"}}


def class_definitions(path: Path, source: str) -> list[tuple[str, str, list[str]]]:
    """(module path, class name, base names) of every class ``source`` defines, at any depth."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ClassDef):
            bases = [
                base.id if isinstance(base, ast.Name) else getattr(base, "attr", "") for base in node.bases
            ]
            found.append((path.as_posix(), node.name, bases))
    return found


def misplaced_exceptions(classes: Iterable[tuple[str, str, list[str]]]) -> list[str]:
    """``path: Name`` of each exception class defined outside an ``errors.py`` (and not allowed there)."""
    classes = list(classes)
    exceptions = BUILTIN_EXCEPTIONS | LIBRARY_EXCEPTIONS
    grew = True
    while grew:
        grew = False
        for _, name, bases in classes:
            if name not in exceptions and exceptions.intersection(bases):
                exceptions.add(name)
                grew = True
    return sorted(
        f"{path}: {name}"
        for path, name, _ in classes
        if name in exceptions and Path(path).name != "errors.py" and name not in STANDALONE.get(path, set())
    )


def project_classes() -> list[tuple[str, str, list[str]]]:
    found = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            found += class_definitions(path.relative_to(ROOT), path.read_text(encoding="utf-8"))
    return found


def test_every_exception_class_is_in_an_errors_module() -> None:
    misplaced = misplaced_exceptions(project_classes())
    assert not misplaced, f"define these in their package's errors.py: {misplaced}"


def test_the_standalone_exceptions_still_exist() -> None:
    defined = {f"{path}: {name}" for path, name, _ in project_classes()}
    for path, names in STANDALONE.items():
        for name in names:
            assert f"{path}: {name}" in defined, f"{path} no longer defines {name}: remove it from STANDALONE"


def test_a_planted_exception_is_found_through_its_bases() -> None:
    planted = [
        ("a/errors.py", "AppError", ["Exception"]),
        ("a/errors.py", "StoreError", ["AppError"]),
        ("a/store.py", "Conflict", ["StoreError"]),
        ("a/store.py", "Busy", ["WatchError"]),
        ("a/store.py", "Store", ["object"]),
    ]
    assert misplaced_exceptions(planted) == ["a/store.py: Busy", "a/store.py: Conflict"]


def test_an_exception_defined_inside_a_function_is_found() -> None:
    source = "def f():\n    class Local(ValueError):\n        pass\n"
    assert misplaced_exceptions(class_definitions(Path("a/store.py"), source)) == ["a/store.py: Local"]

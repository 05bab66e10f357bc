"""Celery stays behind few modules: a static count of the modules that import celery, kombu or billiard.

Every ``import`` and ``from ... import`` counts, also one inside a function or under TYPE_CHECKING.
The target is 4 (the Celery dispatcher, the app and its tasks, the worker start-up, Celery's tools);
``LIMIT`` is where the code stands now and may only go down.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "ace_workers"
CELERY_PACKAGES = frozenset({"celery", "kombu", "billiard"})
TARGET = 4
LIMIT = 4


def celery_importers(root: Path) -> list[str]:
    """The modules under ``root`` that import celery, kombu or billiard anywhere in them."""
    found = []
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        if any(_imports_celery(node) for node in ast.walk(tree)):
            found.append(str(path.relative_to(root.parent)))
    return found


def _imports_celery(node: ast.AST) -> bool:
    if isinstance(node, ast.Import):
        return any(alias.name.split(".")[0] in CELERY_PACKAGES for alias in node.names)
    if isinstance(node, ast.ImportFrom):
        return node.level == 0 and (node.module or "").split(".")[0] in CELERY_PACKAGES
    return False


def test_at_most_limit_modules_import_celery_kombu_or_billiard() -> None:
    importers = celery_importers(PACKAGE)
    assert len(importers) <= LIMIT, f"{len(importers)} modules import celery/kombu/billiard: {importers}"


def test_the_scan_finds_an_import_inside_a_function(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "hidden.py").write_text("def f():\n    from kombu.exceptions import OperationalError\n")
    (package / "clean.py").write_text("import celeryish\nfrom .celery import x\n")
    assert celery_importers(package) == ["pkg/hidden.py"]

"""The layout holds: no import cycles, and the store layer imports no Celery."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("pipeline", "ace_workers")
STORE = ROOT / "ace_workers" / "distributed" / "store"
BROKER_LIBRARIES = ("celery", "kombu")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_modules(path: Path, known: set[str]) -> set[str]:
    """Project modules ``path`` imports, at any depth of the file (type-checking imports included)."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return {module for module in found if module in known and module != name}


def import_graph() -> dict[str, set[str]]:
    files = [path for package in PACKAGES for path in (ROOT / package).rglob("*.py")]
    known = {module_name(path) for path in files}
    return {module_name(path): imported_modules(path, known) for path in files}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle as a list of modules (first repeated at the end), or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(module: str) -> list[str] | None:
        state[module] = 1
        path.append(module)
        for target in sorted(graph[module]):
            if state.get(target) == 1:
                return [*path[path.index(target) :], target]
            if target not in state and (cycle := visit(target)):
                return cycle
        path.pop()
        state[module] = 2
        return None

    for module in sorted(graph):
        if module not in state and (cycle := visit(module)):
            return cycle
    return None


def test_the_project_has_no_import_cycle() -> None:
    cycle = find_cycle(import_graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_the_cycle_finder_finds_a_planted_cycle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}
    assert find_cycle(graph) == ["a", "b", "c", "a"]


def test_a_relative_import_of_a_submodule_is_an_edge() -> None:
    graph = import_graph()
    assert "ace_workers.distributed.store.keys" in graph["ace_workers.distributed.store.store"]


def test_no_module_of_the_store_imports_celery_or_kombu() -> None:
    offenders = []
    for path in sorted(STORE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = (
                [alias.name for alias in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom) and not node.level
                else []
            )
            offenders += [
                f"{path.relative_to(ROOT)}:{node.lineno} imports {name}"
                for name in names
                if name.split(".")[0] in BROKER_LIBRARIES
            ]
    assert offenders == []


def test_importing_the_store_loads_no_celery() -> None:
    # A fresh interpreter: this test process has Celery loaded already.
    code = (
        "import sys\n"
        "from ace_workers.distributed import RedisSkillbookStore, StoreError\n"
        "import ace_workers.distributed.store\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('celery', 'kombu')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.strip() == "[]"


# The distributed layers, lowest first: a module may import its own layer and those below.
LAYERS = ("store", "worker", "producer", "ops")


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    """Imports of ace_workers.distributed from a lower layer into a higher one."""
    rank = {layer: position for position, layer in enumerate(LAYERS)}

    def layer_of(module: str) -> str | None:
        parts = module.split(".")
        return parts[2] if parts[:2] == ["ace_workers", "distributed"] and len(parts) > 2 else None

    found = []
    for module, targets in sorted(graph.items()):
        low = layer_of(module)
        for target in sorted(targets):
            high = layer_of(target)
            if low in rank and high in rank and rank[high] > rank[low]:
                found.append(f"{module} -> {target}")
    return found


def test_the_distributed_layers_import_only_downwards() -> None:
    assert upward_imports(import_graph()) == []


def test_an_import_from_the_store_into_the_worker_counts_as_upward() -> None:
    graph = {"ace_workers.distributed.store.x": {"ace_workers.distributed.worker.y"}}
    assert upward_imports(graph) == ["ace_workers.distributed.store.x -> ace_workers.distributed.worker.y"]

"""The layout holds: top-level packages import only downwards, no import cycles, no Celery in the store."""

from __future__ import annotations

import ast
import functools
import re
import subprocess
import sys
from pathlib import Path

from tests.support.docs import section_text

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("pipeline", "ace_workers")
STORE = ROOT / "ace_workers" / "distributed" / "store"
BROKER_LIBRARIES = ("celery", "kombu")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_modules(path: Path, known: set[str]) -> set[str]:
    """Project modules ``path`` imports, at any depth of the file (type-checking imports included)."""
    return modules_imported_by(
        module_name(path), path.read_text(encoding="utf-8"), known, is_package=path.name == "__init__.py"
    )


def modules_imported_by(name: str, source: str, known: set[str], *, is_package: bool = False) -> set[str]:
    """Project modules the source of module ``name`` imports, at any depth (functions, TYPE_CHECKING)."""
    package = name if is_package else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
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
    """Each project module and the project modules it imports (a copy: tests may plant edges)."""
    return {module: set(targets) for module, targets in _parsed_graph().items()}


@functools.cache
def _parsed_graph() -> dict[str, frozenset[str]]:
    # Parsing every module takes a third of a CPU-second; the tests of one process share it.
    files = [path for package in PACKAGES for path in (ROOT / package).rglob("*.py")]
    known = {module_name(path) for path in files}
    return {module_name(path): frozenset(imported_modules(path, known)) for path in files}


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
LAYERS = ("store", "tenancy", "worker", "producer", "ops")


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


# Every top-level package and module, lowest first: a module may import its own entry and those below.
# "pipeline" is the generic engine; "ace_workers" is the package's own __init__ (the public API, which
# gathers nearly everything); the rest are ace_workers' subpackages and modules. The architecture
# page's layers paragraph (docs/architecture.md) states the same order.
TOP_LAYERS = (
    "pipeline",
    "lazy",
    "counts",
    "errors",
    "env",
    "extras",
    "core",
    "redaction",
    "observability",
    "providers",
    "protocols",
    "dedup",
    "roles",
    "steps",
    "rr",
    "sim",
    "traces",
    "distributed",
    "integrations",
    "runners",
    "operations",
    "mcp",
    "console",
    "intake",
    "demo",
    "deduplication",
    "implementations",
    "ace_workers",
    "cli",
)


def top_layer(module: str) -> str:
    """The entry of TOP_LAYERS ``module`` belongs to."""
    parts = module.split(".")
    return parts[1] if parts[0] == "ace_workers" and len(parts) > 1 else parts[0]


def imports_upward(graph: dict[str, set[str]]) -> list[str]:
    """Imports from a module into a higher top-level package, as "module -> imported module"."""
    rank = {layer: position for position, layer in enumerate(TOP_LAYERS)}
    return [
        f"{module} -> {target}"
        for module, targets in sorted(graph.items())
        for target in sorted(targets)
        if rank[top_layer(target)] > rank[top_layer(module)]
    ]


def test_every_top_level_package_has_one_place_in_the_order() -> None:
    assert sorted({top_layer(module) for module in import_graph()}) == sorted(TOP_LAYERS)


def test_the_top_level_order_names_each_package_once() -> None:
    assert len(set(TOP_LAYERS)) == len(TOP_LAYERS)


def test_no_module_imports_a_higher_top_level_package() -> None:
    assert imports_upward(import_graph()) == []


def test_a_planted_back_arrow_is_found_in_a_function_and_under_type_checking() -> None:
    graph = import_graph()
    planted = (
        "from typing import TYPE_CHECKING\n"
        "from .skill import Skill\n"
        "if TYPE_CHECKING:\n"
        "    from ..runners import ACE\n"
        "def convert() -> None:\n"
        "    from ..traces.session_trace import SessionRecorder\n"
    )
    graph["ace_workers.core.planted"] = modules_imported_by("ace_workers.core.planted", planted, set(graph))
    assert imports_upward(graph) == [
        "ace_workers.core.planted -> ace_workers.runners",
        "ace_workers.core.planted -> ace_workers.traces.session_trace",
    ]


def test_the_architecture_page_states_the_same_order() -> None:
    layers = " ".join(section_text("docs/architecture.md", "## Layers").split())
    stated = re.search(r"Lowest first: ((?:`\w+`[^<.]*< )+`\w+`)\.", layers)
    assert stated is not None, "docs/architecture.md: no 'Lowest first: `a` < `b` < ...' sentence"
    # Each entry is its first `name`; words after it, like "(the package's own `__init__`)", explain it.
    assert tuple(re.findall(r"`(\w+)`", entry)[0] for entry in stated.group(1).split(" < ")) == TOP_LAYERS


def test_the_architecture_page_states_the_distributed_layers() -> None:
    text = " ".join(section_text("docs/architecture.md", "## Layers").split())
    stated = re.search(r"Inside `distributed/` the layers import downwards too \(((?:`\w+` -> )+`\w+`)", text)
    assert stated is not None, "docs/architecture.md: no 'Inside `distributed/` ... (`a` -> ...)' sentence"
    assert tuple(reversed(re.findall(r"`(\w+)`", stated.group(1)))) == LAYERS


def test_the_distributed_package_docstring_lists_its_layers_lowest_first() -> None:
    import ace_workers.distributed as distributed

    doc = distributed.__doc__ or ""
    assert tuple(re.findall(r"(?m)^- ``(\w+)``:", doc)) == LAYERS
    counts = {3: "three", 4: "four", 5: "five", 6: "six", 7: "seven"}
    assert f"in {counts[len(LAYERS)]} layers" in doc

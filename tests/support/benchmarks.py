"""The benchmark scripts of benchmarks/, imported as their own command line runs them."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from types import ModuleType

BENCHMARKS_DIR = Path(__file__).resolve().parents[2] / "benchmarks"


def import_benchmark(name: str) -> ModuleType:
    """The module of ``benchmarks/NAME.py``, its sibling modules importable as when it runs as a script."""
    if str(BENCHMARKS_DIR) not in sys.path:
        sys.path.append(str(BENCHMARKS_DIR))  # appended: never shadows a package of the project
    return importlib.import_module(name)

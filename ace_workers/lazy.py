"""Lazy re-exports for package ``__init__`` modules: a name is imported from its module on first use.

A package lists what it re-exports in ``__all__`` (and imports it under ``if TYPE_CHECKING:`` for
mypy and readers); :func:`lazy_exports` makes its PEP 562 ``__getattr__``. So importing a package,
or any module inside it, costs nothing beyond the package itself: ``import ace_workers.cli`` does
not load the LLM stack or Celery because ``ace_workers/__init__.py`` names them.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Sequence
from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(package: str, exported: Sequence[str], sources: Sequence[str]) -> Callable[[str], Any]:
    """The ``__getattr__`` of ``package``: a name of ``exported`` comes from the first of ``sources``
    (module names, relative to ``package`` when they start with a dot) whose ``__all__`` lists it.

    Sources are searched in order, so list the cheap ones first. A name found is kept in the
    package's namespace: the lookup runs once per name.
    """
    names = frozenset(exported)

    def __getattr__(name: str) -> Any:
        if name in names:
            for source in sources:
                module = importlib.import_module(source, package)
                if name in getattr(module, "__all__", ()):
                    value = getattr(module, name)
                    setattr(sys.modules[package], name, value)
                    return value
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    return __getattr__

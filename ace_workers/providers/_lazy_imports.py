"""Deferred imports of litellm and instructor.

Both are slow to import (litellm takes seconds), and only the processes that
actually call a model need them, so nothing here runs until the first call.
"""

from __future__ import annotations

import functools
import importlib
import os
from types import ModuleType

__all__ = ["import_instructor", "import_litellm"]


@functools.cache
def import_litellm() -> ModuleType:
    """Return the litellm module, importing it on first use."""
    # Without this, `import litellm` downloads its model cost map from GitHub and,
    # on a machine with no or slow network, stalls until that request times out.
    # The copy bundled with litellm is enough to price completions; a caller who
    # wants the live map sets the variable to "False" before the first call.
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    return importlib.import_module("litellm")


@functools.cache
def import_instructor() -> ModuleType:
    """Return the instructor module, importing it (and litellm first) on first use."""
    import_litellm()  # so the cost-map variable is set whoever imports litellm first
    instructor = importlib.import_module("instructor")
    importlib.import_module("instructor.core")  # its exceptions; `instructor` does not load it eagerly
    return instructor

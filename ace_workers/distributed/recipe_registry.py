"""The built-in recipes, by name: the one list settings, the CLI and workers read.

Each name maps to the import path of its recipe function in
:mod:`ace_workers.distributed.worker.recipes`, in the form ``ACE_RECIPES`` gives
recipes of your own (``package.module:function``): a built-in recipe is one every
worker is configured with. The functions are imported only when a worker first
builds a recipe, so settings check ``ACE_RECIPES`` against these names without
loading Celery, the steps or the trace converters.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

__all__ = ["BUILT_IN_RECIPES"]

_RECIPES_MODULE = "ace_workers.distributed.worker.recipes"

# Name -> import path; ACE_RECIPES adds names of its own beside these, never one of them.
BUILT_IN_RECIPES: Mapping[str, str] = MappingProxyType(
    {
        "ace": f"{_RECIPES_MODULE}:ace_recipe",
        "trace_analyser": f"{_RECIPES_MODULE}:trace_analyser_recipe",
        "claude_code_traces": f"{_RECIPES_MODULE}:claude_code_traces_recipe",
        "openclaw_traces": f"{_RECIPES_MODULE}:openclaw_traces_recipe",
        "browser_use_traces": f"{_RECIPES_MODULE}:browser_use_traces_recipe",
    }
)

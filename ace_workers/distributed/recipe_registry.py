"""The built-in recipes, by name: the one list settings, the CLI and workers read.

Each name maps to the import path of its recipe function in
:mod:`ace_workers.distributed.worker.recipes`, in the form ``ACE_RECIPES`` gives
recipes of your own (``package.module:function``): a built-in recipe is one every
worker is configured with. The functions are imported only when a worker first
builds a recipe, so settings check ``ACE_RECIPES`` against these names without
loading Celery, the steps or the trace converters. A recipe of your own is imported
once when the settings are built (:func:`recipe_target_problem`), so a path that
cannot be imported fails at start, naming its entry, not on the first message.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from types import MappingProxyType

__all__ = ["BUILT_IN_RECIPES", "recipe_target_problem"]

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


def recipe_target_problem(path: str) -> str | None:
    """Why ``path`` (``package.module:function``) cannot be imported as a recipe function; None if it can."""
    module_name, _, function_name = path.partition(":")
    if "." in function_name:
        # The worker looks the name up as one attribute of the module, never a dotted path.
        return f"{function_name!r} is a dotted attribute: name a function of {module_name!r} itself"
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:  # a missing module, or one that fails while it is imported
        return f"module {module_name!r} cannot be imported ({type(exc).__name__}: {exc})"
    function = getattr(module, function_name, None)
    if function is None:
        return f"module {module_name!r} has no {function_name!r}"
    if not callable(function):
        return f"{path!r} is a {type(function).__name__}, not a function"
    return None

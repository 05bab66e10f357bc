"""The one way the project reads its Redis Lua scripts: as resources of the installed package.

Each script lives beside the module that runs it (``limiter.lua`` beside ``limiter.py``) and is
read with :mod:`importlib.resources`, as dramatiq reads its Redis broker's scripts, so it is found
wherever the package is: a source checkout, an installed wheel, a zip. A script missing from an
installed package (left out of pyproject.toml's package data) fails with the script's name.
tests/packaging/test_lua_scripts.py holds every other way of reading a ``.lua`` file out.
"""

from __future__ import annotations

from importlib.resources import files

__all__ = ["read_lua"]


def read_lua(module: str, *names: str) -> str:
    """The Lua scripts ``names`` beside ``module`` (the caller's ``__name__``), joined in order.

    Several names make one script: the functions a script calls come first (e.g. a shared
    ``count_step.lua``, then the ``finish_sample.lua`` that calls it).
    """
    package = module.rpartition(".")[0]
    parts = []
    for name in names:
        try:
            parts.append(files(package).joinpath(name).read_text(encoding="utf-8"))
        except FileNotFoundError:
            hint = "is it in pyproject.toml's package data?"
            raise FileNotFoundError(f"the Lua script {name} of {package} is not installed ({hint})") from None
    return "\n".join(parts)

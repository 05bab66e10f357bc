"""Reading settings from the environment: the one reader every settings object uses.

:func:`environment` is the mapping a ``from_env(environ=None)`` reads (``os.environ``
unless given one), read when called, never at import time. :func:`read_env_fields`
fills a dataclass's fields from its ``PREFIX<FIELD>`` variables, parsed by each
field's type, and refuses a ``PREFIX*`` variable that names no field, naming the
closest: ``WorkerSettings`` (``ACE_*``) and ``MCPServerConfig`` (``ACE_MCP_*``) read
this way. Settings whose variables share a prefix with another program's, such as
``OpikSettings`` (``OPIK_*``, also the Opik SDK's), read single variables with the
same words: :data:`TRUE_WORDS` switch a flag on.
"""

from __future__ import annotations

import dataclasses
import difflib
import os
from collections.abc import Callable, Mapping
from typing import Any

from .errors import InvalidSettingError, RetiredSettingError, UnknownSettingError

__all__ = ["FALSE_WORDS", "TRUE_WORDS", "environment", "is_true", "parse_bool", "read_env_fields"]

TRUE_WORDS = frozenset({"1", "true", "yes", "on"})
FALSE_WORDS = frozenset({"0", "false", "no", "off"})


def environment(environ: Mapping[str, str] | None = None) -> Mapping[str, str]:
    """``environ``, or the process's environment (``os.environ``) when None."""
    return os.environ if environ is None else environ


def parse_bool(raw: str) -> bool:
    """True for a true word, False for a false word (any case, spaces around); ValueError otherwise."""
    word = raw.strip().lower()
    if word not in TRUE_WORDS | FALSE_WORDS:
        raise ValueError(raw)
    return word in TRUE_WORDS


def is_true(raw: str | None) -> bool:
    """True for a true word; False for anything else, unset included (a switch that is off by default)."""
    return raw is not None and raw.strip().lower() in TRUE_WORDS


def _parse_int(raw: str) -> int:
    return int(raw.strip().replace("_", ""))


def _parse_float(raw: str) -> float:
    value = float(raw.strip())
    if value != value or value in (float("inf"), float("-inf")):
        raise ValueError("not a finite number")
    return value


def _parse_optional_str(raw: str) -> str | None:
    return raw.strip() or None


_PARSERS: dict[str, tuple[Callable[[str], Any], str]] = {
    "bool": (parse_bool, "true or false (1/0, yes/no, on/off)"),
    "int": (_parse_int, "an integer"),
    "float": (_parse_float, "a number"),
    "str": (str.strip, "a string"),
    "str | None": (_parse_optional_str, "a string"),
}


def read_env_fields(
    cls: Any,
    env: Mapping[str, str],
    *,
    prefix: str,
    owner: str,
    skip: Callable[[str], bool] | None = None,
    retired: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """The dataclass ``cls``'s fields given as ``PREFIX<FIELD>`` variables of ``env``, parsed.

    ``retired`` maps variables that were settings once to what does their job now: one set
    (to anything but blanks) is refused naming that, rather than as a typo.

    Raises:
        RetiredSettingError: a variable of ``retired`` is set.
        UnknownSettingError: a ``PREFIX*`` variable (not ``skip``-ped) names no field.
        InvalidSettingError: a value does not parse as its field's type.
    """
    by_variable = {f"{prefix}{spec.name.upper()}": spec for spec in dataclasses.fields(cls)}
    given = {name: raw for name, raw in env.items() if name.startswith(prefix) and not (skip and skip(name))}
    for name in sorted(given):
        if retired and name in retired and given[name].strip():
            raise RetiredSettingError(name, retired[name])
    unknown = sorted(name for name in given if name not in by_variable)
    if unknown:
        known = list(by_variable)
        suggestions = {
            name: next(iter(difflib.get_close_matches(name, known, n=1)), None) for name in unknown
        }
        raise UnknownSettingError(unknown, suggestions, owner=owner, prefix=prefix)
    return {by_variable[name].name: _parse(by_variable[name], name, raw) for name, raw in given.items()}


def _parse(spec: dataclasses.Field[Any], variable: str, raw: str) -> Any:
    # Annotations are strings under `from __future__ import annotations`; the field
    # types are few and fixed, so a table keyed by their text is exact.
    parse, expected = _PARSERS[str(spec.type)]
    try:
        return parse(raw)
    except ValueError:
        raise InvalidSettingError(variable, raw, f"expected {expected}") from None

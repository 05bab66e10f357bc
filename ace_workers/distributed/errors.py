"""Errors of the distributed settings; each layer's own errors live in its subpackage's errors.py."""

from __future__ import annotations

from ..errors import AceError

__all__ = [
    "SettingsError",
    "InvalidSettingError",
    "UnknownSettingError",
]


class SettingsError(AceError, ValueError):
    """The worker settings are invalid."""


class InvalidSettingError(SettingsError):
    """A setting has a bad value; ``variable`` names its ``ACE_*`` environment variable."""

    def __init__(self, variable: str, value: object, reason: str) -> None:
        self.variable = variable
        self.value = value
        self.reason = reason
        super().__init__(f"{variable}={value!r}: {reason}")


class UnknownSettingError(SettingsError):
    """An ``ACE_*`` environment variable names no setting (usually a typo)."""

    def __init__(
        self,
        names: list[str],
        suggestions: dict[str, str | None],
        *,
        owner: str = "WorkerSettings",
        prefix: str = "ACE_",
    ) -> None:
        self.names = names
        self.suggestions = suggestions
        described = [
            f"{name} (did you mean {suggestions[name]}?)" if suggestions.get(name) else name for name in names
        ]
        super().__init__(
            f"unknown setting(s): {', '.join(described)}; every {prefix}* variable must name a {owner} "
            "field (listed in its docstring)"
        )

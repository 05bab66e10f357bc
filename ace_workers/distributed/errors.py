"""Errors of the distributed settings (defined with every settings object's, in :mod:`ace_workers.errors`).

Each layer's own errors live in its subpackage's errors.py.
"""

from __future__ import annotations

from ..errors import InvalidSettingError, SettingsError, UnknownSettingError

__all__ = [
    "SettingsError",
    "InvalidSettingError",
    "UnknownSettingError",
]

"""What an attacker's message would name: importing this module or calling ``run`` is the breach.

The security tests check that no worker, producer or CLI ever imports it from a message.
"""

from __future__ import annotations

from typing import Any

IMPORTED = True


def run(inputs: Any) -> list[Any]:
    """Would run on the worker if recipes were imported from messages."""
    raise AssertionError("a recipe named by a message was imported and run")

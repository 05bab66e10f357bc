"""How a step class tells the fleet where it runs: three class attributes with their defaults.

Every ACE step may declare them; a step that does not gets the defaults. They are read from the
class, never from a built step, so a producer routes a recipe without building its roles
(``distributed/worker/routes.py``).
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

__all__ = ["StepRouting", "routing_of"]


@dataclass(frozen=True)
class StepRouting:
    """A step class's routing attributes, as declared on the class (the defaults here otherwise)."""

    # It writes the skillbook: it runs on the skillbook's one-thread write queue.
    writes_skillbook: bool = False
    # It runs the agent: on the fleet its view is the version of the sample's label (serving.py).
    serves_skillbook: bool = False
    # Background work starts here: it and the steps after it run on the learn queue.
    async_boundary: bool = False


def routing_of(step_class: type[Any]) -> StepRouting:
    """The routing ``step_class`` declares; an attribute it does not declare has its default."""
    declared = {
        field.name: bool(getattr(step_class, field.name))
        for field in fields(StepRouting)
        if hasattr(step_class, field.name)
    }
    return StepRouting(**declared)

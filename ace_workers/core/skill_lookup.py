"""How the SkillManager looks at existing skills before it adds one: the setting, and what it is shown.

A skillbook over its prompt budget shows the SkillManager only a slice of itself,
chosen for the whole reflection; the skill a learning restates may be outside it,
and the SkillManager then adds it again. The lookup finds, for each learning, the
skills most like it (and the pending review proposals stating it), so a restatement
becomes an UPDATE or TAG of the skill that exists.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

__all__ = [
    "AdditionsInFlight",
    "Announcement",
    "LOOKUP_MODES",
    "LOOKUP_OFF",
    "LOOKUP_SIMILAR",
    "LOOKUP_TOOLS",
    "PendingOperation",
    "PendingSource",
    "SkillLookup",
]

LOOKUP_SIMILAR = "similar"  # the most similar skills go into the prompt, found before the call
LOOKUP_TOOLS = "tools"  # the SkillManager searches and reads skills itself, through tool calls
LOOKUP_OFF = "off"  # the budgeted slice only, as before the lookup existed
LOOKUP_MODES = (LOOKUP_SIMILAR, LOOKUP_TOOLS, LOOKUP_OFF)


@dataclass(frozen=True)
class SkillLookup:
    """The SkillManager's lookup: its mode, the skills shown per lookup, and the tool-call bound."""

    mode: str = LOOKUP_SIMILAR
    k: int = 8
    max_calls: int = 4

    def __post_init__(self) -> None:
        if self.mode not in LOOKUP_MODES:
            raise ValueError(f"SkillLookup.mode must be one of {', '.join(LOOKUP_MODES)}, got {self.mode!r}")
        for name in ("k", "max_calls"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"SkillLookup.{name} must be a positive int, got {value!r}")


@dataclass(frozen=True)
class PendingOperation:
    """One operation of a proposal waiting for review, as the SkillManager is shown it."""

    proposal_id: str
    type: str
    section: str = ""
    skill_id: str = ""
    content: str = ""


# The pending operations of the skillbook the SkillManager decides for (a store's review queue).
PendingSource = Callable[[], Sequence[PendingOperation]]


@dataclass(frozen=True)
class Announcement:
    """A decision's announced ADDs (``entry_id``) and those announced before it, still in flight."""

    entry_id: str
    earlier: list[PendingOperation] = field(default_factory=list)


class AdditionsInFlight(Protocol):
    """Where concurrent SkillManager decisions on one skillbook say what they are about to add.

    Decisions running side by side each read the skillbook before the others' ADDs are
    written, so each would add the same lesson. Announcing is ordered: of two
    overlapping decisions the later one sees the earlier one's ADDs and decides again.
    """

    def announce(self, additions: Sequence[PendingOperation]) -> Announcement:
        """Record ``additions`` as being added; the ADDs announced before them, oldest first."""
        ...

    def withdraw(self, announcement: Announcement) -> None:
        """Forget ``announcement``'s ADDs: the decision that announced them changed its mind."""
        ...

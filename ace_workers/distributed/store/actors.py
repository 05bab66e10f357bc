"""Who changed a skillbook: the actor names provenance, reviews and label moves record.

A learning step records the role that decided (``skill_manager``, ``reflector`` for
the tags it gives, ``dedup``);
a person or a program acting by hand records ``user:NAME`` (the CLI: the
login name, or ``--actor``/ACE_ACTOR) or ``key:NAME`` (an MCP client's token name).
"""

from __future__ import annotations

import getpass
import re

__all__ = [
    "DEDUP",
    "PRUNE",
    "REFLECTOR",
    "SKILL_MANAGER",
    "actor_from_option",
    "api_key_actor",
    "check_actor",
    "local_user_actor",
    "user_actor",
]

SKILL_MANAGER = "skill_manager"
REFLECTOR = "reflector"
DEDUP = "dedup"
PRUNE = "prune"

# Printable, one line, short: an actor lands in change-log entries and in terminal tables.
_ACTOR = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.@:+/-]{0,127}")


def check_actor(actor: str) -> str:
    """Return ``actor`` if it can name who acted, else raise ValueError naming it."""
    if not isinstance(actor, str) or _ACTOR.fullmatch(actor) is None:
        raise ValueError(
            f"actor {actor!r} is not a valid name: 1 to 128 characters of letters, digits and _.@:+/-"
        )
    return actor


def user_actor(name: str) -> str:
    """The actor of a person acting by hand."""
    return check_actor(f"user:{name}")


def api_key_actor(name: str) -> str:
    """The actor of a client acting with an API key (an MCP token's name)."""
    return check_actor(f"key:{name}")


def local_user_actor() -> str:
    """The actor of whoever runs this process: ``user:`` and the login name."""
    try:
        name = getpass.getuser()
    except (KeyError, OSError):  # no login name (a container's anonymous uid)
        name = "unknown"
    return user_actor(re.sub(r"[^A-Za-z0-9_.-]", "_", name) or "unknown")


def actor_from_option(value: str | None) -> str:
    """The actor a ``--actor`` option names: as given when it has a kind (``key:ci``), else a user."""
    if not value:
        return local_user_actor()
    return check_actor(value) if ":" in value else user_actor(value)

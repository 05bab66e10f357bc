"""The migrations of the stored data, one per schema version, in order (see ``store/schema.py``).

A new shape of data gets a module ``mNNN_<what>.py`` with one class (see :class:`.base.Migration`),
appended here, and ``SCHEMA_VERSION`` raised to its number.
"""

from __future__ import annotations

from .base import Changes, Migration, Progress
from .m001_active_skill_counts import ActiveSkillCounts
from .m002_proposal_merge_keys import ProposalMergeKeys

__all__ = ["MIGRATIONS", "Changes", "Migration", "Progress"]

# MIGRATIONS[i] takes the data from schema i to schema i + 1.
MIGRATIONS: tuple[Migration, ...] = (ActiveSkillCounts(), ProposalMergeKeys())

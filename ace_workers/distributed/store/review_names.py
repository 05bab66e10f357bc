"""The names a review speaks in: a proposal's statuses, what a policy rule names, the duplicate modes.

Apart from proposals.py and review_policy.py (which load pydantic and the store), so that
``skillbook review --help`` names them without loading either.
"""

from __future__ import annotations

from enum import Enum
from typing import Literal

from ...core.skill import OPERATION_TYPES

__all__ = ["CONSOLIDATE", "DUPLICATE_MODES", "POLICY_SUBJECTS", "DuplicateMode", "ProposalStatus"]

CONSOLIDATE = "CONSOLIDATE"  # a dedup run's consolidation batch, reviewed as one
# What a rule can name: the update operation types, and dedup's consolidation.
POLICY_SUBJECTS = (*OPERATION_TYPES, CONSOLIDATE)
DuplicateMode = Literal["review", "reject"]
DUPLICATE_MODES: tuple[DuplicateMode, ...] = ("review", "reject")


class ProposalStatus(str, Enum):
    """Where a proposal stands; only a pending one can be decided."""

    PENDING = "pending"
    APPROVED = "approved"
    REJECTED = "rejected"

"""Shared skillbooks for the ACE core tests."""

from __future__ import annotations

import pytest

from ace_workers.core import Skillbook


@pytest.fixture
def book() -> Skillbook:
    """A skillbook holding general-00001 ("Check units") and math-00002 ("Estimate first")."""
    skillbook = Skillbook()
    skillbook.add_skill("general", "Check units")
    skillbook.add_skill("math", "Estimate first")
    assert [s.id for s in skillbook.skills()] == ["general-00001", "math-00002"]
    return skillbook

"""Fixtures of the step tests: a skillbook, a sample and a context builder (the fake roles are in
tests/support/roles.py)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from ace_workers.core import ACEStepContext, Sample, Skillbook, SkillbookView


@pytest.fixture
def skillbook() -> Skillbook:
    """A skillbook with one arithmetic skill, ``math-00001``."""
    book = Skillbook()
    book.add_skill("math", "Add the units digits first.", skill_id="math-00001")
    return book


@pytest.fixture
def sample() -> Sample:
    return Sample(question="What is 2+2?", context="arithmetic", ground_truth="4", id="s-1")


@pytest.fixture
def make_ctx(skillbook: Skillbook, sample: Sample) -> Callable[..., ACEStepContext]:
    """Build an ACEStepContext on the ``skillbook`` fixture's view: ``make_ctx(trace=...)``."""

    def build(**fields: Any) -> ACEStepContext:
        fields.setdefault("sample", sample)
        fields.setdefault("skillbook", SkillbookView(skillbook))
        return ACEStepContext(**fields)

    return build

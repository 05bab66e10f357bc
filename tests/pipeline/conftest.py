"""Fixtures of the pipeline engine tests (the context and step builder live in tests/support/pipeline.py)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.support.pipeline import Ctx


@pytest.fixture
def ctx_factory() -> Callable[..., Ctx]:
    """Build Ctx objects: ``ctx_factory(x=1)``."""
    return Ctx

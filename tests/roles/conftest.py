"""The role tests' skillbook (their fake LLM, RecordingLLM, is in tests/support/llms.py)."""

from __future__ import annotations

import pytest

from ace_workers.core import Skillbook


@pytest.fixture
def skillbook() -> Skillbook:
    book = Skillbook()
    book.add_skill("data-loading", "Stream files larger than memory in chunks.")
    book.add_skill("math", "Check units before adding quantities.")
    book.add_skill("math", "Round only the final result.")
    return book

"""An ACE_LLM_FACTORY that refuses to build: a process that must build no LLM client fails loudly."""

from __future__ import annotations

from typing import Any

REFUSING_FACTORY = "tests.support.unbuildable:refusing_llm_factory"


def refusing_llm_factory(model: str) -> Any:
    """Raise: nothing here may build an LLM client."""
    raise AssertionError(f"an LLM client for {model!r} was built")

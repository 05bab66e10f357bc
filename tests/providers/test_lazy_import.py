"""Importing the providers package must not pay for litellm or instructor."""

from __future__ import annotations

import subprocess
import sys

import pytest

CHECK = """
import sys
import ace_workers.providers as providers
providers.LiteLLMClient("openai/gpt-4o-mini", fallbacks=["openai/gpt-4o"])
providers.wrap_with_instructor(providers.LiteLLMClient("openai/gpt-4o-mini"))
loaded = sorted(name for name in ("litellm", "instructor", "openai") if name in sys.modules)
assert not loaded, loaded
"""


@pytest.mark.slow
def test_importing_providers_and_building_clients_does_not_import_litellm_or_instructor() -> None:
    result = subprocess.run([sys.executable, "-c", CHECK], capture_output=True, text=True, timeout=60)

    assert result.returncode == 0, result.stderr

"""Without browser-use: a clear error at construction, and importing ace-workers never needs it."""

from __future__ import annotations

import subprocess
import sys

import pytest

from ace_workers.errors import MissingExtraError
from ace_workers.integrations.browser_use import BrowserExecuteStep
from ace_workers.roles import Reflector, SkillManager
from ace_workers.runners.browser_use import BrowserUse
from ace_workers.sim import SimulatedLLM


def test_the_execute_step_names_the_extra_when_browser_use_is_missing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "browser_use", None)  # import browser_use now raises ImportError
    with pytest.raises(MissingExtraError, match=r"BrowserExecuteStep needs the optional extra 'browser-use'"):
        BrowserExecuteStep(object())


def test_the_runner_names_the_extra_when_browser_use_is_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "browser_use", None)
    llm = SimulatedLLM()
    with pytest.raises(MissingExtraError, match=r"pip install 'ace-workers\[browser-use\]'"):
        BrowserUse.from_roles(browser_llm=object(), reflector=Reflector(llm), skill_manager=SkillManager(llm))


def test_importing_ace_workers_and_the_integration_loads_no_browser_use() -> None:
    # A fresh interpreter: this test process may have browser-use loaded already.
    code = (
        "import sys\n"
        "import ace_workers, ace_workers.integrations.browser_use, ace_workers.runners.browser_use\n"
        "import ace_workers.distributed.producer.producer\n"
        "print('browser_use' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"

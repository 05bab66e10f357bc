"""ACE_SERVE_LABEL and ACE_CANARY_SHARE: checked when the settings are built, naming the variable."""

from __future__ import annotations

import pytest

from ace_workers.distributed.settings import WorkerSettings
from ace_workers.errors import InvalidSettingError


def test_the_serving_settings_are_read_from_the_environment() -> None:
    settings = WorkerSettings.from_env({"ACE_SERVE_LABEL": "prod", "ACE_CANARY_SHARE": "0.1"})
    assert (settings.serve_label, settings.canary_share) == ("prod", 0.1)
    assert (WorkerSettings().serve_label, WorkerSettings().canary_share) == (None, 0.0)


def test_a_serve_label_that_is_no_label_is_refused_naming_the_variable() -> None:
    with pytest.raises(InvalidSettingError, match=r"ACE_SERVE_LABEL.*invalid label 'pr od'"):
        WorkerSettings.from_env({"ACE_SERVE_LABEL": "pr od"})
    with pytest.raises(InvalidSettingError, match=r"ACE_SERVE_LABEL.*current version itself"):
        WorkerSettings.from_env({"ACE_SERVE_LABEL": "head"})


def test_a_canary_share_outside_0_to_1_is_refused_naming_the_variable() -> None:
    with pytest.raises(InvalidSettingError, match=r"ACE_CANARY_SHARE.*from 0 to 1"):
        WorkerSettings.from_env({"ACE_CANARY_SHARE": "10"})
    with pytest.raises(InvalidSettingError, match="ACE_CANARY_SHARE"):
        WorkerSettings.from_env({"ACE_CANARY_SHARE": "-0.5"})

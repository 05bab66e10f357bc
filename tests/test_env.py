"""The one environment reader: every settings object reads a switch with the same words."""

from __future__ import annotations

import pytest

from ace_workers.distributed.settings import WorkerSettings
from ace_workers.env import FALSE_WORDS, TRUE_WORDS
from ace_workers.errors import InvalidSettingError
from ace_workers.observability.opik import OpikSettings

SPELLINGS = [" On ", "YES", "True"]


@pytest.mark.parametrize("word", sorted(TRUE_WORDS) + SPELLINGS)
def test_a_true_word_switches_a_worker_setting_and_opik_alike(word: str) -> None:
    assert WorkerSettings.from_env({"ACE_DEDUP_ACROSS_SECTIONS": word}).dedup_across_sections is True
    assert OpikSettings.from_env({"OPIK_DISABLED": word}).disabled is True


@pytest.mark.parametrize("word", sorted(FALSE_WORDS))
def test_a_false_word_leaves_a_worker_setting_and_opik_off(word: str) -> None:
    assert WorkerSettings.from_env({"ACE_DEDUP_ACROSS_SECTIONS": word}).dedup_across_sections is False
    assert OpikSettings.from_env({"OPIK_DISABLED": word}).disabled is False


def test_a_word_that_is_neither_fails_a_worker_setting_naming_the_variable() -> None:
    with pytest.raises(InvalidSettingError, match="ACE_DEDUP_ACROSS_SECTIONS"):
        WorkerSettings.from_env({"ACE_DEDUP_ACROSS_SECTIONS": "maybe"})


def test_opik_stays_on_for_a_word_that_is_neither() -> None:
    # OPIK_* is the Opik SDK's namespace too: its switch is off unless switched on, never refused.
    assert OpikSettings.from_env({"OPIK_DISABLED": "maybe"}).disabled is False

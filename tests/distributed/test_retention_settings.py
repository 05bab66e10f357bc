"""The ACE_RETENTION_* settings: their defaults make the policy, and a bad value is refused naming it."""

from __future__ import annotations

import pytest

from ace_workers.distributed.errors import InvalidSettingError
from ace_workers.distributed.settings import WorkerSettings
from ace_workers.distributed.store.retention import RetentionPolicy
from ace_workers.operations.retention import retention_rows


def test_the_defaults_are_the_documented_policy() -> None:
    assert WorkerSettings.from_env({}).retention_policy() == RetentionPolicy(
        dead_letter_days=30, proposal_days=90, audit_days=365, label_moves=1000, evaluations=200
    )


def test_each_setting_reaches_its_bound() -> None:
    settings = WorkerSettings.from_env(
        {
            "ACE_RETENTION_DEAD_LETTER_DAYS": "7",
            "ACE_RETENTION_PROPOSAL_DAYS": "0.5",
            "ACE_RETENTION_AUDIT_DAYS": "0",
            "ACE_RETENTION_LABEL_MOVES": "1000000",
            "ACE_RETENTION_EVALUATIONS": "3",
        }
    )
    assert settings.retention_policy() == RetentionPolicy(7, 0.5, 0, 1_000_000, 3)
    kept = {row.kind: row.kept for row in retention_rows(settings)}
    assert kept["decided_proposals"] == "0.5 days after the decision; pending ones until decided"
    assert kept["audit"] == "forever"
    assert kept["label_log"] == "the newest 1000000 label moves per skillbook"


@pytest.mark.parametrize(
    ("variable", "value", "problem"),
    [
        ("ACE_RETENTION_DEAD_LETTER_DAYS", "-1", "must be at least 0"),
        ("ACE_RETENTION_AUDIT_DAYS", "nan", "expected a number"),
        ("ACE_RETENTION_PROPOSAL_DAYS", "inf", "expected a number"),
        ("ACE_RETENTION_LABEL_MOVES", "1.5", "expected an integer"),
        ("ACE_RETENTION_EVALUATIONS", "-3", "must be at least 0"),
    ],
)
def test_a_bad_value_is_refused_in_one_line_naming_the_variable(
    variable: str, value: str, problem: str
) -> None:
    with pytest.raises(InvalidSettingError) as refused:
        WorkerSettings.from_env({variable: value})

    message = str(refused.value)
    assert message.startswith(f"{variable}=")
    assert message.endswith(problem)
    assert "\n" not in message

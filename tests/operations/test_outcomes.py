"""One table answers every error: the most specific class decides, and a bug is never a refusal."""

from __future__ import annotations

import pytest

from ace_workers.distributed.store.errors import StoreError, UnknownProposalError, UnknownSkillbookError
from ace_workers.distributed.tenancy.errors import ForeignSkillbookError, RoleTooLowError
from ace_workers.distributed.worker.errors import WriteConcurrencyError
from ace_workers.errors import AceError, SettingsError
from ace_workers.operations import OUTCOMES, outcome_of
from ace_workers.operations.outcomes import UNEXPECTED


def _scope_details() -> dict[str, str]:
    return {
        "key_id": "k1",
        "key_tenant": "beta",
        "key_role": "read",
        "skillbook": "book",
        "owner": "alpha",
        "needed": "review",
    }


def test_an_unknown_name_is_not_found_in_every_front_end() -> None:
    found = outcome_of(UnknownProposalError("book", "p-1"))
    assert (found.kind, found.exit_code, found.http_status) == ("not_found", 2, 404)


def test_a_role_too_low_and_another_tenants_skillbook_are_refused_by_policy() -> None:
    assert outcome_of(RoleTooLowError(**_scope_details())).http_status == 403
    # Exit 4 as the README's scheme says (the console still hides it as 404: console/views.py).
    foreign = outcome_of(ForeignSkillbookError(**_scope_details()))
    assert (foreign.kind, foreign.exit_code, foreign.http_status) == ("forbidden", 4, 403)


def test_a_worker_configuration_the_worker_refuses_is_a_settings_error() -> None:
    assert outcome_of(WriteConcurrencyError("ace.write", 4)).exit_code == 2


@pytest.mark.parametrize("bug", [KeyError("x"), ValueError("x"), LookupError("x"), AceError("x")])
def test_an_error_the_table_does_not_name_is_a_bug_not_a_refusal(bug: Exception) -> None:
    assert outcome_of(bug) is UNEXPECTED
    assert UNEXPECTED.http_status == 500


def test_the_most_specific_class_decides() -> None:
    class Special(UnknownSkillbookError):
        pass

    assert outcome_of(Special("book")) is OUTCOMES[UnknownSkillbookError]
    assert StoreError not in OUTCOMES  # a sub-base alone says nothing of how to answer


def test_settings_errors_exit_with_the_usage_code() -> None:
    assert outcome_of(SettingsError("bad")).exit_code == 2

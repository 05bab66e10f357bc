"""One table answers every error: the most specific class decides, and a bug is never a refusal."""

from __future__ import annotations

import pytest

from ace_workers.distributed.store.errors import StoreError, UnknownProposalError, UnknownSkillbookError
from ace_workers.distributed.tenancy.errors import ForeignSkillbookError, RoleTooLowError
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


def test_a_role_too_low_is_forbidden_and_another_tenants_skillbook_looks_absent() -> None:
    assert outcome_of(RoleTooLowError(**_scope_details())).http_status == 403
    assert outcome_of(ForeignSkillbookError(**_scope_details())).http_status == 404


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

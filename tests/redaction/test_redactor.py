"""The redactor: each kind it finds, placeholders stable within a trace, and what it leaves alone."""

from __future__ import annotations

import pytest

from ace_workers.core.context import ACEStepContext
from ace_workers.core.environments import Sample
from ace_workers.core.outputs import SkillManagerOutput
from ace_workers.core.updates import UpdateBatch, UpdateOperation
from ace_workers.redaction import redact_context, redactor_for
from ace_workers.redaction.detectors import luhn_valid
from tests.support.redaction import API_KEY, AWS_KEY, CARD, EMAIL, GITHUB_TOKEN, OTHER_EMAIL

DEFAULT = redactor_for(None)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (f"key {API_KEY}.", "key <SECRET_1>."),
        (f"id {AWS_KEY}", "id <SECRET_1>"),
        (f"token {GITHUB_TOKEN}", "token <SECRET_1>"),
        ("sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWx", "<SECRET_1>"),
        ("xoxb-1234567890-0987654321-AbCdEfGhIjKl", "<SECRET_1>"),
        ("Authorization: Bearer eyJhbGciOi.eyJzdWIiOi.SflKxwRJSM", "Authorization: Bearer <SECRET_1>"),
        ("postgres://app:s3cretPass@db.internal:5432/app", "postgres://app:<SECRET_1>@db.internal:5432/app"),
        ("password: hunter2pass then", "password: <SECRET_1> then"),
        ('api_key="abcd1234efgh"', 'api_key="<SECRET_1>"'),
        ("ace_0123abcd_AbCdEfGhIjKlMnOpQrStUv12", "<SECRET_1>"),
        (f"mail {EMAIL}!", "mail <EMAIL_1>!"),
        (f"card {CARD} ok", "card <CARD_1> ok"),
        ("card 4539-1488-0343-6467", "card <CARD_1>"),
        ("call +1 415 555 2671 now", "call <PHONE_1> now"),
        ("call (415) 555-2671 now", "call <PHONE_1> now"),
    ],
)
def test_the_default_kinds_are_found(text: str, expected: str) -> None:
    assert DEFAULT.text(text) == expected


def test_a_whole_pem_private_key_is_one_placeholder() -> None:
    key = "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA\nabc==\n-----END RSA PRIVATE KEY-----"

    assert DEFAULT.text(f"key:\n{key}\ndone") == "key:\n<SECRET_1>\ndone"


@pytest.mark.parametrize(
    "text",
    [
        "order 4539 1488 0343 6468 was shipped",  # fails Luhn
        "at 1700000000000 ms",  # a millisecond timestamp
        "on 2024-01-15 at 12:30:45",
        "skill math-00012 and task-sk-notakeyatall",
        "version 1.2.3.4 of the tool",  # an IP only with the ipv4 kind
        "id 5551234567 in the ledger",  # a bare run of digits is no phone
        "the secret is out",
    ],
)
def test_ordinary_text_is_left_alone(text: str) -> None:
    assert DEFAULT.text(text) == text


def test_the_same_value_keeps_its_placeholder_and_another_gets_the_next() -> None:
    text = (
        f"{EMAIL} wrote to {OTHER_EMAIL}, then {EMAIL.upper()} again; card {CARD} = {CARD.replace(' ', '-')}"
    )

    assert (
        DEFAULT.text(text) == "<EMAIL_1> wrote to <EMAIL_2>, then <EMAIL_1> again; card <CARD_1> = <CARD_1>"
    )


def test_a_phone_number_is_the_same_whichever_way_it_is_written() -> None:
    assert DEFAULT.text("+1 415-555-2671 or (415) 555 2671") == "<PHONE_1> or <PHONE_1>"


def test_a_trace_is_numbered_across_its_strings_and_its_keys_are_kept() -> None:
    trace = {"question": f"for {EMAIL}?", "steps": [{EMAIL: f"to {OTHER_EMAIL}"}, f"cc {EMAIL}"], "n": 3}

    assert DEFAULT.json(trace) == {
        "question": "for <EMAIL_1>?",
        "steps": [{EMAIL: "to <EMAIL_2>"}, "cc <EMAIL_1>"],
        "n": 3,
    }


def test_a_value_keyed_as_a_credential_goes_whole() -> None:
    assert DEFAULT.json({"db_password": "correct horse", "api_key": "short", "name": "x"}) == {
        "db_password": "<SECRET_1>",
        "api_key": "<SECRET_2>",
        "name": "x",
    }


def test_redacting_twice_changes_nothing_and_never_reuses_a_placeholder() -> None:
    once = DEFAULT.json({"a": f"{EMAIL}", "b": f"{OTHER_EMAIL}"})
    partly = {**once, "c": "new.person@example.com"}

    assert DEFAULT.json(once) == once
    assert DEFAULT.json(partly)["c"] == "<EMAIL_3>"


def test_a_trace_unchanged_is_the_same_object() -> None:
    trace = {"question": "What is 2 + 2?", "steps": ["add"]}

    assert DEFAULT.json(trace) is trace


def test_opt_in_kinds_and_a_custom_kind() -> None:
    redactor = redactor_for(r"default,ipv4,ipv6,iban,EMPLOYEE=EMP-\d{4,6}")
    text = "from 10.0.0.7 and fe80::1ff:fe23:4567:890a pay DE89 3704 0044 0532 0130 00 for EMP-12345"

    assert redactor.text(text) == "from <IPV4_1> and <IPV6_1> pay <IBAN_1> for <EMPLOYEE_1>"


def test_a_custom_kind_with_a_redact_group_keeps_the_rest() -> None:
    redactor = redactor_for("TICKET=ticket #(?P<redact>[0-9]+)")

    assert (
        redactor.text("see ticket #4411 and ticket #4411") == "see ticket #<TICKET_1> and ticket #<TICKET_1>"
    )


def test_off_changes_nothing_and_a_removed_kind_is_kept() -> None:
    text = f"{EMAIL} {API_KEY}"

    assert redactor_for("off").text(text) == text
    assert redactor_for("default,-email").text(text) == f"{EMAIL} <SECRET_1>"


def test_a_national_number_of_another_region() -> None:
    assert redactor_for("phone:GB").text("ring 020 7946 0958") == "ring <PHONE_1>"


def test_luhn() -> None:
    assert luhn_valid(CARD.replace(" ", ""))
    assert not luhn_valid("4539148803436468")


def test_a_context_is_redacted_in_one_session_with_its_sample_and_outputs() -> None:
    operation = UpdateOperation(type="ADD", section="mail", content=f"Write to {OTHER_EMAIL} not {EMAIL}.")
    ctx = ACEStepContext(
        sample=Sample(question=f"Who is {EMAIL}?", ground_truth=f"{OTHER_EMAIL}", metadata={"by": EMAIL}),
        trace={"question": f"Who is {EMAIL}?"},
        skill_manager_output=SkillManagerOutput(update=UpdateBatch(reasoning="", operations=[operation])),
    )

    redacted = redact_context(DEFAULT, ctx)

    assert redacted.trace == {"question": "Who is <EMAIL_1>?"}
    assert isinstance(redacted.sample, Sample)
    assert redacted.sample.question == "Who is <EMAIL_1>?"
    assert redacted.sample.ground_truth == "<EMAIL_2>"
    assert redacted.sample.metadata == {"by": "<EMAIL_1>"}
    assert redacted.skill_manager_output is not None
    assert redacted.skill_manager_output.update.operations[0].content == "Write to <EMAIL_2> not <EMAIL_1>."
    assert ctx.trace == {"question": f"Who is {EMAIL}?"}  # the original is untouched


KEEPING_USER = redactor_for("default,keep:metadata.user_id")


def test_a_kept_path_stays_as_sent_and_the_same_value_elsewhere_is_redacted() -> None:
    trace = {"question": f"write to {EMAIL}", "metadata": {"user_id": EMAIL, "note": OTHER_EMAIL}}

    redacted = KEEPING_USER.json(trace)

    assert redacted["metadata"]["user_id"] == EMAIL
    assert redacted["question"] == "write to <EMAIL_1>"
    assert redacted["metadata"]["note"] == "<EMAIL_2>"
    assert trace["metadata"]["user_id"] == EMAIL  # the trace sent is not changed in place
    assert DEFAULT.json(trace)["metadata"]["user_id"] == "<EMAIL_1>"  # without keep, it goes


def test_a_kept_path_of_a_sample_stays_as_sent() -> None:
    sample = Sample(question=f"mail {EMAIL}", metadata={"user_id": EMAIL})
    ctx = ACEStepContext(sample=sample, trace={"metadata": {"user_id": EMAIL}, "answer": EMAIL})

    redacted = redact_context(KEEPING_USER, ctx)

    assert redacted.sample.metadata == {"user_id": EMAIL}
    assert redacted.sample.question == "mail <EMAIL_1>"
    assert redacted.trace == {"metadata": {"user_id": EMAIL}, "answer": "<EMAIL_1>"}

"""ACE_REDACT's syntax: what each entry means, and one clear line naming a bad entry."""

from __future__ import annotations

import pytest

from ace_workers.distributed.settings import WorkerSettings
from ace_workers.errors import InvalidSettingError
from ace_workers.redaction import DEFAULT_KINDS, RedactionSpecError, parse_redaction_spec


def test_unset_and_default_are_the_default_kinds() -> None:
    assert parse_redaction_spec(None).kinds == DEFAULT_KINDS
    assert parse_redaction_spec(" default ").kinds == DEFAULT_KINDS
    assert set(DEFAULT_KINDS) == {"secret", "email", "card", "phone"}


def test_kinds_are_added_and_removed_and_applied_in_their_own_order() -> None:
    spec = parse_redaction_spec("ipv4,default,-phone,iban")

    assert spec.kinds == ("secret", "email", "card", "iban", "ipv4")


def test_off_is_nothing() -> None:
    assert parse_redaction_spec("off").off


def test_a_phone_region() -> None:
    assert parse_redaction_spec("default,phone:gb").phone_region == "GB"


def test_a_custom_regex_keeps_its_commas() -> None:
    spec = parse_redaction_spec(r"default,ORDER=ORD-\d{2,4}[A-Z,]x,USER=u\,1")

    assert [(pattern.name, pattern.regex) for pattern in spec.custom] == [
        ("ORDER", r"ORD-\d{2,4}[A-Z,]x"),
        ("USER", r"u\,1"),
    ]


@pytest.mark.parametrize(
    ("text", "entry", "reason"),
    [
        ("default,ipv5", "ipv5", "unknown kind 'ipv5'"),
        ("off,email", "off", "cannot be combined"),
        ("default,,email", "default,,email", "an entry is empty"),
        ("email:GB", "email:GB", "only phone takes an argument"),
        ("phone:GBR", "phone:GBR", "two letters"),
        ("EMP=EMP-[0-9", "EMP=EMP-[0-9", "does not compile"),
        ("EMP=x*", "EMP=x*", "matches the empty string"),
        ("email=x+", "email=x+", "built-in kind"),
        ("9X=abc", "9X=abc", "NAME=REGEX"),
        ("A=a,A=b", "A=b", "named twice"),
        ("-ipv7", "-ipv7", "unknown kind 'ipv7'"),
    ],
)
def test_a_bad_entry_is_named_on_one_line(text: str, entry: str, reason: str) -> None:
    with pytest.raises(RedactionSpecError) as caught:
        parse_redaction_spec(text)

    assert caught.value.entry == entry
    assert reason in str(caught.value)
    assert "\n" not in str(caught.value)


def test_ace_redact_is_checked_when_the_settings_are_read() -> None:
    assert "ipv4" in WorkerSettings.from_env({"ACE_REDACT": "default,ipv4"}).redaction_spec().kinds
    with pytest.raises(InvalidSettingError) as caught:
        WorkerSettings.from_env({"ACE_REDACT": "default,ipv5"})

    assert str(caught.value).startswith("ACE_REDACT='default,ipv5': entry 'ipv5': unknown kind")


def test_keep_takes_dotted_paths() -> None:
    spec = parse_redaction_spec("default,keep:metadata.user_id,keep:session")
    assert spec.kept == (("metadata", "user_id"), ("session",))
    assert spec.kinds == DEFAULT_KINDS


@pytest.mark.parametrize("entry", ["keep:", "keep:metadata..user_id", "keep:" + ".".join(["a"] * 17)])
def test_a_bad_kept_path_is_named(entry: str) -> None:
    with pytest.raises(RedactionSpecError, match="keep takes a dotted path") as raised:
        parse_redaction_spec("default," + entry)
    assert entry in str(raised.value)

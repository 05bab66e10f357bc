"""check_model asks litellm, before any call, whether a model can be called from here."""

from __future__ import annotations

import pytest

from ace_workers.errors import ModelUnavailableError, SettingsError
from ace_workers.providers import check_model


def test_a_model_litellm_has_no_provider_for_is_named_in_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(ModelUnavailableError) as raised:
        check_model("nope")

    assert str(raised.value).startswith("model 'nope' is not a model litellm knows (")
    assert "\n" not in str(raised.value)
    assert raised.value.model == "nope"
    assert capsys.readouterr().out == ""  # litellm's "Provider List" banner stays off stdout


def test_a_missing_key_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)

    with pytest.raises(ModelUnavailableError, match=r"^model 'gpt-4o-mini' needs OPENAI_API_KEY$") as raised:
        check_model("gpt-4o-mini")

    assert raised.value.missing == ("OPENAI_API_KEY",)
    assert isinstance(raised.value, SettingsError)


def test_every_missing_variable_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    # Each of these would count as AWS credentials for litellm.
    for name in (
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_ROLE_ARN",
        "AWS_PROFILE",
        "AWS_WEB_IDENTITY_TOKEN_FILE",
        "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
        "AWS_CONTAINER_CREDENTIALS_FULL_URI",
    ):
        monkeypatch.delenv(name, raising=False)

    with pytest.raises(ModelUnavailableError) as raised:
        check_model("bedrock/anthropic.claude-3-haiku-20240307-v1:0")

    assert str(raised.value).endswith("needs AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY")


def test_a_model_with_its_key_set_or_given_passes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    check_model("gpt-4o-mini", api_key="sk-given")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    check_model("openai/gpt-4o-mini")


def test_ollama_needs_no_api_base_it_defaults_to_localhost(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OLLAMA_API_BASE", raising=False)
    check_model("ollama/llama3")

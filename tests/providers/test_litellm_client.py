"""LiteLLMClient against the real litellm code path, answering offline from mock_response."""

from __future__ import annotations

import logging
from collections.abc import Callable

import pytest

from ace_workers.errors import LLMError, LLMRequestRejected
from ace_workers.protocols import LLMClientLike
from ace_workers.providers import LiteLLMClient, LLMResponse
from ace_workers.providers._lazy_imports import import_litellm
from tests.support.llms import FALLBACK, MOCK_USAGE, MODEL, ScriptedCompletion, auth_error, connection_error

Script = Callable[..., ScriptedCompletion]


def make_client(**options: object) -> LiteLLMClient:
    """A client with no backoff, so retries cost no time."""
    options.setdefault("retry_wait_seconds", 0.0)
    return LiteLLMClient(MODEL, api_key="sk-test", **options)  # type: ignore[arg-type]


def test_complete_returns_the_text_usage_and_cost() -> None:
    response = make_client().complete("Say hello.", mock_response="Hello there.")

    assert isinstance(response, LLMResponse)
    assert response.text == "Hello there."
    assert response.model == MODEL
    assert response.usage == MOCK_USAGE
    assert response.cost is not None
    assert response.cost > 0
    assert response.raw.choices[0].message.content == "Hello there."


def test_cost_is_none_for_a_model_litellm_cannot_price() -> None:
    client = LiteLLMClient("openai/no-such-model", api_key="sk-test")

    response = client.complete("Say hello.", mock_response="Hello.")

    assert response.text == "Hello."
    assert response.cost is None


def test_complete_messages_sends_the_conversation_and_client_options(script: Script) -> None:
    scripted = script("Fine.")
    client = make_client(max_tokens=50, timeout=5.0, api_base="http://llm.invalid", top_p=0.5)
    conversation = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "How are you?"}]

    response = client.complete_messages(conversation, temperature=0.3)

    assert response.text == "Fine."
    [call] = scripted.calls
    assert call["model"] == MODEL
    assert call["messages"] == conversation
    assert call["temperature"] == 0.3  # the per-call value wins over the client's 0.0
    assert (call["max_tokens"], call["timeout"], call["api_base"], call["top_p"]) == (
        50,
        5.0,
        "http://llm.invalid",
        0.5,
    )
    # The client owns retries: litellm and the provider SDK must not add their own.
    assert call["num_retries"] == 0


@pytest.mark.parametrize("option", ["max_retries", "stream", "messages"])
def test_options_the_client_manages_are_rejected_when_declared(option: str) -> None:
    with pytest.raises(TypeError, match=option):
        LiteLLMClient(MODEL, **{option: 1})  # type: ignore[arg-type]


def test_options_the_client_manages_are_rejected_per_call() -> None:
    with pytest.raises(TypeError, match="model"):
        make_client().complete("hi", model=FALLBACK)


@pytest.mark.parametrize(
    "error_name",
    ["APIConnectionError", "Timeout", "RateLimitError", "ServiceUnavailableError", "InternalServerError"],
)
def test_transient_errors_are_retried_until_a_reply_comes(script: Script, error_name: str) -> None:
    error = getattr(import_litellm(), error_name)(
        message="try later", llm_provider="openai", model="gpt-4o-mini"
    )
    scripted = script(error, error, "Recovered.")

    response = make_client(num_retries=3).complete("hi")

    assert response.text == "Recovered."
    assert scripted.models == [MODEL] * 3


def test_transient_errors_stop_after_num_retries_with_llm_error(script: Script) -> None:
    scripted = script(connection_error())

    with pytest.raises(LLMError, match=MODEL) as raised:
        make_client(num_retries=2).complete("hi")

    assert len(scripted.calls) == 3  # the first attempt and two retries
    assert isinstance(raised.value.__cause__, import_litellm().APIConnectionError)


def test_backoff_grows_exponentially_with_jitter_up_to_the_cap(
    script: Script, caplog: pytest.LogCaptureFixture
) -> None:
    script(connection_error())
    client = make_client(num_retries=3, retry_wait_seconds=0.001, retry_max_wait_seconds=0.0035)

    with caplog.at_level(logging.DEBUG, logger="ace_workers.providers"), pytest.raises(LLMError):
        client.complete("hi")

    waits = []
    for record in caplog.records:
        if "retrying in" in record.msg:
            assert isinstance(record.args, tuple)
            assert isinstance(record.args[-1], float)
            waits.append(record.args[-1])
    assert len(waits) == 3
    # retry_wait_seconds * 2**n, capped, plus up to retry_wait_seconds of jitter
    assert 0.001 <= waits[0] <= 0.002
    assert 0.002 <= waits[1] <= 0.003
    assert 0.0035 <= waits[2] <= 0.0045


def test_fallback_model_answers_when_the_primary_exhausts_its_retries(script: Script) -> None:
    scripted = script(connection_error(), connection_error(), "From the fallback.")

    response = make_client(num_retries=1, fallbacks=[FALLBACK]).complete("hi")

    assert scripted.models == [MODEL, MODEL, FALLBACK]
    assert response.text == "From the fallback."
    assert response.model == FALLBACK


def test_authentication_error_is_not_retried(script: Script) -> None:
    scripted = script(auth_error())

    with pytest.raises(LLMError) as raised:
        make_client(num_retries=3).complete("hi")

    assert scripted.models == [MODEL]
    assert isinstance(raised.value.__cause__, import_litellm().AuthenticationError)


def test_authentication_error_moves_straight_to_the_fallback(script: Script) -> None:
    scripted = script(auth_error(), "From the fallback.")

    response = make_client(num_retries=3, fallbacks=[FALLBACK]).complete("hi")

    assert scripted.models == [MODEL, FALLBACK]
    assert response.model == FALLBACK


def test_llm_error_names_every_model_tried(script: Script) -> None:
    script(auth_error())

    with pytest.raises(LLMError, match=f"{MODEL}, {FALLBACK}"):
        make_client(fallbacks=[FALLBACK]).complete("hi")


def test_client_satisfies_the_llm_client_protocol_and_hides_its_key() -> None:
    client = LiteLLMClient(MODEL, api_key="sk-secret")

    assert isinstance(client, LLMClientLike)
    assert "sk-secret" not in repr(client)


def test_missing_credentials_are_refused_at_once_not_retried_as_a_server_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # No mock: the real litellm and openai code paths. The openai SDK refuses before sending,
    # and litellm maps its refusal to InternalServerError (status 500), which looks transient.
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    litellm = import_litellm()
    attempts: list[str] = []
    real = litellm.completion

    def counted(**kwargs: object) -> object:
        attempts.append(str(kwargs["model"]))
        return real(**kwargs)

    monkeypatch.setattr(litellm, "completion", counted)

    with pytest.raises(LLMRequestRejected) as raised:
        LiteLLMClient(MODEL, num_retries=3, retry_wait_seconds=0.0).complete("hi")

    assert attempts == [MODEL]
    assert isinstance(raised.value.__cause__, litellm.InternalServerError)
    assert "OPENAI_API_KEY" in str(raised.value)


@pytest.mark.parametrize("error_name", ["AuthenticationError", "NotFoundError", "BadRequestError"])
def test_a_refused_request_is_tried_once_and_raised_as_llm_request_rejected(
    script: Script, error_name: str
) -> None:
    error = getattr(import_litellm(), error_name)(
        message="refused", llm_provider="openai", model="gpt-4o-mini"
    )
    scripted = script(error)

    with pytest.raises(LLMRequestRejected) as raised:
        make_client(num_retries=3).complete("hi")

    assert scripted.models == [MODEL]
    assert raised.value.models == (MODEL,)
    assert raised.value.last_error is raised.value.__cause__


def test_only_a_request_every_model_refused_is_llm_request_rejected(script: Script) -> None:
    # Both models refuse the first request; on the second the primary only loses its connection.
    script(auth_error(), auth_error(), connection_error(), auth_error())
    client = make_client(num_retries=0, fallbacks=[FALLBACK])

    with pytest.raises(LLMRequestRejected) as refused:
        client.complete("hi")
    with pytest.raises(LLMError) as raised:
        client.complete("hi")

    assert refused.value.models == (MODEL, FALLBACK)
    assert not isinstance(raised.value, LLMRequestRejected)  # another delivery may succeed


def test_the_error_of_the_last_model_is_one_line(script: Script) -> None:
    script(
        import_litellm().BadRequestError(
            message="bad request\n  first detail\n  second detail", llm_provider="openai", model="m"
        )
    )

    with pytest.raises(LLMError) as raised:
        make_client().complete("hi")

    assert "\n" not in str(raised.value)
    assert "bad request first detail second detail" in str(raised.value)

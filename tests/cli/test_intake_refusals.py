"""What ``enqueue`` and ``learn`` refuse before sending anything: lines that are not traces or
samples (named by file, line and what is missing), and a bad ``--api-key`` (named as the flag)."""

from __future__ import annotations

from pathlib import Path

import pytest
import redis

from tests.support.cli import invoke, keys_of, write_traces

PREFIX = "cliintake"
# Shaped like a key (ace_<id>_<secret>), made by no one.
UNKNOWN_KEY = "ace_0123abcd_" + "x" * 24


@pytest.fixture
def cli_settings() -> dict[str, str]:
    """``env`` (tests/support/cli_env.py) under this module's prefix."""
    return {"ACE_QUEUE_PREFIX": PREFIX}


@pytest.fixture
def cli_stamped() -> bool:
    """Unstamped: a refused command writes nothing at all."""
    return False


@pytest.mark.parametrize(
    ("line", "kind"), [("[1, 2]", "array"), ('"a string"', "string"), ("42", "number"), ("true", "boolean")]
)
def test_enqueue_refuses_a_line_that_is_not_an_object_naming_file_and_line_and_sends_nothing(
    env: pytest.MonkeyPatch, redis_client: redis.Redis, line: str, kind: str
) -> None:
    traces = write_traces(Path("traces.jsonl"), 2)
    with traces.open("a") as handle:
        handle.write(line + "\n")
    code, output = invoke("enqueue", "traces.jsonl", "--skillbook", "book")
    assert code == 2
    assert f"traces.jsonl:3: a JSON {kind}, not a trace: each line must be a JSON object" in output
    assert keys_of(redis_client, PREFIX) == []


def test_learn_names_the_missing_question_of_a_sample(env: pytest.MonkeyPatch) -> None:
    Path("samples.jsonl").write_text('{"question": "q1"}\n{"context": "c"}\n')
    code, output = invoke("learn", "samples.jsonl", "--recipe", "ace")
    assert code == 2
    assert "samples.jsonl:2: not a sample: 'question' is missing" in output


def test_learn_names_the_unknown_field_of_a_sample(env: pytest.MonkeyPatch) -> None:
    Path("samples.jsonl").write_text('{"question": "q1", "colour": "red"}\n')
    code, output = invoke("learn", "samples.jsonl", "--recipe", "ace")
    assert code == 2
    assert "samples.jsonl:1: not a sample: unknown field 'colour'" in output


def test_learn_names_a_sample_line_that_is_not_an_object(env: pytest.MonkeyPatch) -> None:
    Path("samples.jsonl").write_text('["q1"]\n')
    code, output = invoke("learn", "samples.jsonl", "--recipe", "ace")
    assert code == 2
    assert "samples.jsonl:1: a JSON array, not a sample: a sample is an object with 'question'" in output


def test_a_malformed_api_key_flag_is_named_as_the_flag(
    env: pytest.MonkeyPatch, redis_client: redis.Redis
) -> None:
    write_traces(Path("traces.jsonl"), 2)
    code, output = invoke("enqueue", "traces.jsonl", "--api-key", "hunter2")
    assert code == 2
    assert "Invalid value for --api-key: not an API key: expected ace_<id>_<secret>" in output
    assert "ACE_API_KEY" not in output
    assert "hunter2" not in output  # a secret is never echoed
    assert keys_of(redis_client, PREFIX) == []


@pytest.mark.parametrize("given_by", ["--api-key", "ACE_API_KEY"])
def test_an_unknown_api_key_is_named_by_where_it_was_given(
    env: pytest.MonkeyPatch, redis_client: redis.Redis, given_by: str
) -> None:
    if given_by == "ACE_API_KEY":
        env.setenv("ACE_API_KEY", UNKNOWN_KEY)
        code, output = invoke("batch", "list")
    else:
        code, output = invoke("batch", "list", "--api-key", UNKNOWN_KEY)
    assert code == 2
    assert f"API key '0123abcd' given by {given_by}: unknown or revoked" in output

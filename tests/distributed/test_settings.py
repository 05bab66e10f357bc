"""WorkerSettings: defaults, ACE_* variables, loud failures on typos and bad values; Redis URL forms."""

from __future__ import annotations

import dataclasses

import pytest

from ace_workers.distributed.connections import broker_url_for, client_url_for, redact_url
from ace_workers.distributed.errors import InvalidSettingError, SettingsError, UnknownSettingError
from ace_workers.distributed.settings import WorkerSettings, env_name
from ace_workers.errors import AceError


def test_an_empty_environment_gives_the_documented_defaults() -> None:
    settings = WorkerSettings.from_env({})
    assert settings == WorkerSettings()
    assert settings.redis_url is None  # the embedded Redis
    assert settings.queue_prefix == "ace"
    assert (settings.agent_model, settings.reflector_model, settings.skill_manager_model) == (
        "sim",
        "sim",
        "sim",
    )
    assert settings.visibility_timeout_seconds == 3600
    assert settings.claim_check_bytes == 256 * 1024
    assert settings.sim_latency_seconds == 0
    assert settings.sim_trust_threshold == 3


def test_variables_override_their_fields_with_parsed_values() -> None:
    settings = WorkerSettings.from_env(
        {
            "ACE_REDIS_URL": "redis://10.0.0.5:6380/2",
            "ACE_QUEUE_PREFIX": "tenant-a",
            "ACE_REFLECTOR_MODEL": "openai/gpt-4o-mini",
            "ACE_LLM_FACTORY": "my_company.llm:make_client",
            "ACE_TASK_MAX_RETRIES": " 7 ",
            "ACE_CLAIM_CHECK_BYTES": "1_048_576",
            "ACE_RETRY_BACKOFF_SECONDS": "0.5",
            "ACE_SIM_LATENCY_SECONDS": "0.2",
            "PATH": "/usr/bin",  # not ours: ignored
        }
    )
    assert settings.redis_url == "redis://10.0.0.5:6380/2"
    assert settings.queue_prefix == "tenant-a"
    assert settings.reflector_model == "openai/gpt-4o-mini"
    assert settings.agent_model == "sim"
    assert settings.llm_factory == "my_company.llm:make_client"
    assert settings.task_max_retries == 7
    assert settings.claim_check_bytes == 1_048_576
    assert settings.retry_backoff_seconds == 0.5
    assert settings.sim_latency_seconds == 0.2


def test_from_env_reads_os_environ_when_called_not_when_imported(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ACE_MAX_BATCH_SIZE", "12")
    assert WorkerSettings.from_env().max_batch_size == 12


def test_the_test_suites_variable_is_no_setting_of_the_workers() -> None:
    # The suite takes ACE_TEST_REDIS_URL out of the environment itself (tests/conftest.py).
    with pytest.raises(UnknownSettingError, match="ACE_TEST_REDIS_URL"):
        WorkerSettings.from_env({"ACE_TEST_REDIS_URL": "redis://127.0.0.1:6379/15"})


def test_the_command_lines_actor_variable_is_left_to_it_but_a_lookalike_is_not() -> None:
    assert WorkerSettings.from_env({"ACE_ACTOR": "ann", "ACE_MAX_BATCH_SIZE": "12"}).max_batch_size == 12
    with pytest.raises(UnknownSettingError, match="ACE_ACTORS"):
        WorkerSettings.from_env({"ACE_ACTORS": "ann"})


def test_an_empty_redis_url_means_the_embedded_redis() -> None:
    assert WorkerSettings.from_env({"ACE_REDIS_URL": ""}).redis_url is None


def test_a_misspelled_variable_fails_naming_it_and_the_closest_known_name() -> None:
    with pytest.raises(UnknownSettingError) as caught:
        WorkerSettings.from_env(
            {"ACE_REDIS_ULR": "redis://x", "ACE_VISIBILITY_TIMEOUT": "60", "ACE_ZZZ": "1"}
        )
    error = caught.value
    assert error.names == ["ACE_REDIS_ULR", "ACE_VISIBILITY_TIMEOUT", "ACE_ZZZ"]
    assert error.suggestions == {
        "ACE_REDIS_ULR": "ACE_REDIS_URL",
        "ACE_VISIBILITY_TIMEOUT": "ACE_VISIBILITY_TIMEOUT_SECONDS",
        "ACE_ZZZ": None,
    }
    assert "ACE_REDIS_ULR (did you mean ACE_REDIS_URL?)" in str(error)
    assert isinstance(error, SettingsError)
    assert isinstance(error, AceError)


@pytest.mark.parametrize(
    ("variable", "raw", "reason"),
    [
        ("ACE_TASK_MAX_RETRIES", "three", "expected an integer"),
        ("ACE_MAX_BATCH_SIZE", "1.5", "expected an integer"),
        ("ACE_LLM_TIMEOUT_SECONDS", "soon", "expected a number"),
        ("ACE_SIM_LATENCY_SECONDS", "nan", "expected a number"),
        ("ACE_TASK_MAX_RETRIES", "-1", "must be at least 0"),
        ("ACE_MAX_BATCH_SIZE", "0", "must be at least 1"),
        ("ACE_LLM_TIMEOUT_SECONDS", "0", "must be greater than 0"),
        ("ACE_RETRY_BACKOFF_SECONDS", "-0.5", "must be at least 0"),
        ("ACE_DEDUP_AUTO_MERGE_THRESHOLD", "0.8", "must be at least ACE_DEDUP_THRESHOLD"),
        ("ACE_DEDUP_AUTO_MERGE_THRESHOLD", "1.2", "must be at most 1"),
        ("ACE_DEDUP_ACROSS_SECTIONS", "2", "expected true or false"),
        ("ACE_DEDUP_ACROSS_SECTIONS", "maybe", "expected true or false"),
        ("ACE_PRUNE_MIN_TAGS", "0", "must be at least 1"),
        ("ACE_PROMPT_MAX_SKILLS", "-5", "must be at least 0"),
    ],
)
def test_a_bad_value_fails_naming_the_variable(variable: str, raw: str, reason: str) -> None:
    with pytest.raises(InvalidSettingError) as caught:
        WorkerSettings.from_env({variable: raw})
    assert caught.value.variable == variable
    assert str(caught.value).startswith(f"{variable}=")
    assert reason in str(caught.value)


@pytest.mark.parametrize("model", ["simulated", "SIM", "mock", "gpt 4o", "", "/gpt-4o"])
def test_an_unknown_model_spec_fails_naming_the_variable(model: str) -> None:
    with pytest.raises(InvalidSettingError, match="unknown model spec") as caught:
        WorkerSettings.from_env({"ACE_SKILL_MANAGER_MODEL": model})
    assert caught.value.variable == "ACE_SKILL_MANAGER_MODEL"


@pytest.mark.parametrize("model", ["gpt-4o-mini", "anthropic/claude-3-5-sonnet-20240620", "ollama/llama3:8b"])
def test_litellm_model_strings_are_accepted(model: str) -> None:
    assert WorkerSettings.from_env({"ACE_AGENT_MODEL": model}).agent_model == model


@pytest.mark.parametrize(
    ("variable", "raw"),
    [
        ("ACE_LLM_FACTORY", "my_company.llm.make_client"),  # no colon
        ("ACE_LLM_FACTORY", "my-company:make"),
        ("ACE_REDIS_URL", "http://127.0.0.1:6379"),
        ("ACE_REDIS_URL", "unix://"),
        ("ACE_QUEUE_PREFIX", "has space"),
        ("ACE_QUEUE_PREFIX", "{tag}"),
    ],
)
def test_malformed_strings_fail_naming_the_variable(variable: str, raw: str) -> None:
    with pytest.raises(InvalidSettingError) as caught:
        WorkerSettings.from_env({variable: raw})
    assert caught.value.variable == variable


def test_the_redis_password_never_appears_in_an_error() -> None:
    with pytest.raises(InvalidSettingError) as caught:
        WorkerSettings.from_env({"ACE_REDIS_URL": "http://user:hunter2@host:1"})
    assert "hunter2" not in str(caught.value)


def test_the_visibility_timeout_must_exceed_the_slowest_step() -> None:
    with pytest.raises(InvalidSettingError, match="slowest step") as caught:
        WorkerSettings.from_env(
            {
                "ACE_REFLECTOR_MODEL": "openai/gpt-4o-mini",
                "ACE_LLM_TIMEOUT_SECONDS": "60",
                "ACE_LLM_MAX_RETRIES": "3",
                "ACE_VISIBILITY_TIMEOUT_SECONDS": "180",
            }
        )
    assert caught.value.variable == "ACE_VISIBILITY_TIMEOUT_SECONDS"
    # The simulator's latency counts instead of the LLM timeout when every role is simulated.
    quick = WorkerSettings.from_env({"ACE_VISIBILITY_TIMEOUT_SECONDS": "2", "ACE_SIM_LATENCY_SECONDS": "0.2"})
    assert quick.slowest_step_seconds() == pytest.approx(0.6)


def test_direct_construction_is_checked_the_same_way() -> None:
    with pytest.raises(InvalidSettingError, match="ACE_MAX_TRACE_BYTES"):
        WorkerSettings(max_trace_bytes=-1)
    with pytest.raises(InvalidSettingError, match="expected an integer"):
        WorkerSettings(task_max_retries=2.5)  # type: ignore[arg-type]


def test_settings_are_frozen() -> None:
    settings = WorkerSettings()
    with pytest.raises(dataclasses.FrozenInstanceError):
        settings.queue_prefix = "other"  # type: ignore[misc]


def test_queue_names_carry_the_prefix() -> None:
    assert WorkerSettings(queue_prefix="tenant-a").queue_names() == {
        "execute": "tenant-a.execute",
        "learn": "tenant-a.learn",
        "write": "tenant-a.write",
    }
    assert WorkerSettings().queue_names()["write"] == "ace.write"


def test_every_setting_says_what_it_does() -> None:
    # The configuration reference (docs/reference/configuration.md) is generated from this text.
    missing = [
        env_name(spec.name) for spec in dataclasses.fields(WorkerSettings) if not spec.metadata.get("help")
    ]
    assert missing == []


def test_unix_socket_urls_translate_between_the_redis_py_and_kombu_forms() -> None:
    assert broker_url_for("unix:///tmp/r.sock?db=3") == "redis+socket:///tmp/r.sock?virtual_host=3"
    assert client_url_for("redis+socket:///tmp/r.sock?virtual_host=3") == "unix:///tmp/r.sock?db=3"
    assert client_url_for(broker_url_for("unix:///tmp/r.sock")) == "unix:///tmp/r.sock"
    tcp = "redis://:pw@127.0.0.1:6379/15"
    assert broker_url_for(tcp) == tcp
    assert client_url_for(tcp) == tcp


def test_redact_url_masks_only_the_password() -> None:
    assert redact_url("redis://:s3cret@127.0.0.1:6379/0") == "redis://:***@127.0.0.1:6379/0"
    assert redact_url("rediss://alice:s3cret@[::1]:6380/1") == "rediss://alice:***@[::1]:6380/1"
    assert redact_url("redis://alice@host/0") == "redis://alice@host/0"
    assert redact_url("unix:///tmp/r.sock?db=0") == "unix:///tmp/r.sock?db=0"


@pytest.mark.parametrize(
    ("raw", "value"),
    [
        ("1", True),
        ("true", True),
        ("Yes", True),
        ("ON", True),
        ("0", False),
        ("false", False),
        ("off", False),
    ],
)
def test_a_switch_reads_the_usual_words_for_true_and_false(raw: str, value: bool) -> None:
    assert WorkerSettings.from_env({"ACE_DEDUP_ACROSS_SECTIONS": raw}).dedup_across_sections is value


def test_a_switch_given_as_a_number_in_code_is_refused() -> None:
    with pytest.raises(InvalidSettingError, match="ACE_DEDUP_ACROSS_SECTIONS"):
        WorkerSettings(dedup_across_sections=1)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("variable", "value", "problem"),
    [
        (
            "ACE_MAX_BATCH_SIZE",
            "9" * 400,
            "ACE_MAX_BATCH_SIZE='99999999999999999999... (400 digits)': must be at most 1e+09",
        ),
        ("ACE_LLM_TIMEOUT_SECONDS", "1e300", "ACE_LLM_TIMEOUT_SECONDS='1e+300': must be at most 1e+09"),
    ],
)
def test_a_numeric_setting_beyond_the_documented_maximum_is_refused_naming_it(
    variable: str, value: str, problem: str
) -> None:
    with pytest.raises(InvalidSettingError) as refused:
        WorkerSettings.from_env({variable: value})
    assert str(refused.value) == problem


def test_a_numeric_setting_given_in_code_must_be_finite() -> None:
    with pytest.raises(InvalidSettingError, match="ACE_LLM_TIMEOUT_SECONDS=inf: expected a finite number"):
        WorkerSettings(llm_timeout_seconds=float("inf"))


def test_the_skill_lookup_settings_are_read_into_the_skill_managers_lookup() -> None:
    settings = WorkerSettings.from_env(
        {"ACE_SKILL_LOOKUP": "tools", "ACE_SKILL_LOOKUP_K": "3", "ACE_SKILL_LOOKUP_MAX_CALLS": "2"}
    )
    lookup = settings.skill_lookup_config()
    assert (lookup.mode, lookup.k, lookup.max_calls) == ("tools", 3, 2)
    default = WorkerSettings.from_env({}).skill_lookup_config()
    assert (default.mode, default.k, default.max_calls) == ("similar", 8, 4)


@pytest.mark.parametrize(
    ("variable", "value", "problem"),
    [
        ("ACE_SKILL_LOOKUP", "always", "use one of similar, tools, off"),
        ("ACE_SKILL_LOOKUP_K", "0", "must be at least 1"),
        ("ACE_SKILL_LOOKUP_MAX_CALLS", "0", "must be at least 1"),
    ],
)
def test_a_bad_skill_lookup_setting_is_refused_naming_it(variable: str, value: str, problem: str) -> None:
    with pytest.raises(InvalidSettingError, match=f"{variable}.*{problem}"):
        WorkerSettings.from_env({variable: value})

"""The JSON wire format of step contexts, and the claim check against the real Redis (db 15)."""

from __future__ import annotations

import json
import math
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import pytest
import redis
from kombu.utils import json as kombu_json

from ace_workers.core import Skillbook
from ace_workers.core.context import ACEStepContext, SkillbookView
from ace_workers.core.environments import Sample
from ace_workers.core.outputs import (
    AgentOutput,
    ExtractedLearning,
    ReflectorOutput,
    SkillManagerOutput,
    SkillTag,
)
from ace_workers.core.updates import UpdateBatch, UpdateOperation
from ace_workers.distributed.settings import WorkerSettings
from ace_workers.distributed.worker.errors import ClaimMissing, PayloadError, PayloadTooLarge
from ace_workers.distributed.worker.payload import (
    FORMAT_VERSION,
    ClaimCheck,
    check_trace,
    context_to_payload,
    find_non_json,
    payload_to_context,
)

# --- contexts at each stage of the ACE pipeline ------------------------------------------------

SAMPLE = Sample(
    question="What is 17 * 3?",
    context="Arithmetic drill.",
    ground_truth="51",
    metadata={"source": "drill", "difficulty": 2, "tags": ["math"]},
    id="s-1",
)
AGENT_OUTPUT = AgentOutput(
    reasoning="Use [math-00001]: 17 * 3 = 51.", final_answer="51", skill_ids=["math-00001"]
)
TRACE = {
    "question": SAMPLE.question,
    "context": SAMPLE.context,
    "ground_truth": "51",
    "reasoning": AGENT_OUTPUT.reasoning,
    "answer": "51",
    "skill_ids": ["math-00001"],
    "feedback": "Correct.",
}
REFLECTION = ReflectorOutput(
    reasoning="The agent multiplied correctly.",
    error_identification="none",
    key_insight="Multiply digit by digit.",
    extracted_learnings=[
        ExtractedLearning(learning="Multiply digit by digit.", atomicity_score=0.9, evidence="51")
    ],
    skill_tags=[SkillTag(id="math-00001", tag="helpful")],
)
SKILL_MANAGER_OUTPUT = SkillManagerOutput(
    update=UpdateBatch(
        reasoning="One new lesson, one confirmation.",
        operations=[
            UpdateOperation(
                type="ADD",
                section="math",
                content="Multiply digit by digit.",
                justification="It worked.",
                insight_source={"sample_id": "s-1", "epoch": 1, "step_index": 3},
            ),
            UpdateOperation(type="TAG", skill_id="math-00001", metadata={"helpful": 1}),
        ],
    )
)

STAGES = {
    "sample": ACEStepContext(sample=SAMPLE),
    "agent_output": ACEStepContext(sample=SAMPLE, agent_output=AGENT_OUTPUT),
    "trace": ACEStepContext(sample=SAMPLE, agent_output=AGENT_OUTPUT, trace=TRACE),
    "reflection": ACEStepContext(
        sample=SAMPLE, agent_output=AGENT_OUTPUT, trace=TRACE, reflection=REFLECTION
    ),
    "skill_manager_output": ACEStepContext(
        sample=SAMPLE,
        agent_output=AGENT_OUTPUT,
        trace=TRACE,
        reflection=REFLECTION,
        skill_manager_output=SKILL_MANAGER_OUTPUT,
        epoch=2,
        total_epochs=3,
        step_index=4,
        total_steps=10,
        global_sample_index=14,
        metadata={"skillbook_version": 7},
    ),
}


def with_sample(sample: object) -> ACEStepContext:
    """A context whose sample is a path or a dict (the field is typed for Sample-like objects)."""
    return ACEStepContext(sample=cast(Any, sample))


def kombu_round_trip(payload: dict[str, Any]) -> Any:
    """The payload through Celery's JSON serializer (kombu's), as a message body travels."""
    return cast(Any, kombu_json).loads(cast(Any, kombu_json).dumps(payload))


def round_trip(
    ctx: ACEStepContext, claims: ClaimCheck | None = None
) -> tuple[dict[str, Any], ACEStepContext]:
    """Encode, send through JSON text as Celery does, decode."""
    payload = context_to_payload(ctx, claims=claims)
    wire = json.loads(json.dumps(payload, allow_nan=False))
    return payload, payload_to_context(wire, skillbook=None, claims=claims)


# --- fixtures ----------------------------------------------------------------------------------


@pytest.fixture
def claims(redis_client: redis.Redis) -> Iterator[ClaimCheck]:
    """A claim check with a 1 KiB threshold under a prefix of its own."""
    prefix = f"test-payload-{uuid.uuid4().hex[:8]}"
    yield ClaimCheck(redis_client, threshold_bytes=1024, ttl_seconds=60, prefix=prefix)
    keys = list(redis_client.scan_iter(match=f"{prefix}:*"))
    if keys:
        redis_client.delete(*keys)


# --- round trips -------------------------------------------------------------------------------


@pytest.mark.parametrize("stage", list(STAGES))
def test_contexts_at_every_stage_of_the_ace_pipeline_round_trip(stage: str) -> None:
    ctx = STAGES[stage]
    _, back = round_trip(ctx)
    assert back == ctx
    assert type(back.sample) is Sample


def test_operations_keep_their_insight_source() -> None:
    _, back = round_trip(STAGES["skill_manager_output"])
    assert back.skill_manager_output is not None
    ops = back.skill_manager_output.update.operations
    assert ops[0].insight_source == {"sample_id": "s-1", "epoch": 1, "step_index": 3}
    assert ops[1].metadata == {"helpful": 1}


def test_a_raw_trace_of_event_dicts_round_trips() -> None:
    trace = [
        {"event": "call", "args": [1, 2.5, None, True, -0.0, 10**30]},
        {"event": "result", "value": {"ok": False, "text": "caf\u00e9 \U0001f600 \ud800"}},
    ]
    ctx = with_sample(Path("/data/run-1.jsonl")).replace(trace=trace)
    payload, back = round_trip(ctx)
    assert payload["trace"] == trace
    assert back == ctx


@pytest.mark.parametrize(
    "sample",
    [Path("/data/traces/run-1.jsonl"), "relative/run-2.jsonl"],
    ids=["pathlib", "str"],
)
def test_path_samples_come_back_as_the_same_type(sample: object) -> None:
    payload, back = round_trip(with_sample(sample))
    assert payload["sample"]["type"] == "path"
    assert back.sample == sample
    assert type(back.sample) is type(sample)


def test_a_dict_sample_round_trips() -> None:
    sample: dict[str, Any] = {"question": "q", "extra": {"n": [1, 2]}}
    payload, back = round_trip(with_sample(sample))
    assert payload["sample"] == {"type": "dict", "value": sample}
    assert cast(Any, back.sample) == sample


def test_metadata_and_counters_round_trip() -> None:
    ctx = ACEStepContext(
        metadata={"skillbook_version": 3, "tenant": "acme", "nested": {"a": [1, "b", None]}},
        epoch=3,
        total_epochs=5,
        step_index=9,
        total_steps=None,
        global_sample_index=29,
    )
    _, back = round_trip(ctx)
    assert back == ctx
    assert dict(back.metadata) == {"skillbook_version": 3, "tenant": "acme", "nested": {"a": [1, "b", None]}}


def test_the_payload_is_plain_json_without_the_skillbook() -> None:
    ctx = STAGES["skill_manager_output"].replace(skillbook=SkillbookView(Skillbook()))
    payload = context_to_payload(ctx)
    text = json.dumps(payload, allow_nan=False)
    assert "skillbook" not in payload
    assert '"skillbook"' not in text
    assert payload["v"] == FORMAT_VERSION
    # Celery's own JSON serializer gives the same payload back.
    assert kombu_round_trip(payload) == json.loads(text)


def test_the_decoded_context_carries_the_given_skillbook_view() -> None:
    view = SkillbookView(Skillbook())
    ctx = STAGES["reflection"].replace(skillbook=view)
    back = payload_to_context(context_to_payload(ctx), skillbook=view)
    assert back.skillbook is view
    assert back == ctx


def test_the_raw_llm_response_does_not_travel() -> None:
    output = AgentOutput(reasoning="r", final_answer="a", raw={"usage": {"total_tokens": 12}})
    payload, back = round_trip(ACEStepContext(agent_output=output))
    assert "raw" not in payload["agent_output"]
    assert back.agent_output is not None
    assert back.agent_output.raw == {}
    assert back.agent_output.final_answer == "a"


def test_the_recursive_reflectors_trace_travels_with_its_reflection_and_nothing_else_of_raw() -> None:
    rr_trace = {
        "iterations": [
            {
                "iteration": 1,
                "code": "print(1)",
                "stdout": "1\n",
                "stderr": "",
                "error": None,
                "final_called": True,
                "killed": None,
                "duration_s": 0.2,
            }
        ],
        "iterations_used": 1,
        "max_iterations": 10,
        "final_called": True,
    }
    reflection = ReflectorOutput(reasoning="r", raw={"rr_trace": rr_trace, "usage": {"total_tokens": 9}})
    payload, back = round_trip(ACEStepContext(reflection=reflection))
    assert payload["reflection"]["raw"] == {"rr_trace": rr_trace}
    assert back.reflection is not None
    assert back.reflection.raw == {"rr_trace": rr_trace}


# --- what cannot travel ------------------------------------------------------------------------


class Opaque:
    pass


def circular() -> dict[str, Any]:
    loop: dict[str, Any] = {"a": []}
    loop["a"].append(loop)
    return loop


@pytest.mark.parametrize(
    ("trace", "message"),
    [
        ({"steps": [1, 2, 3, {"a", "b"}]}, "trace['steps'][3] is a set"),
        ({"steps": [(1, 2)]}, "trace['steps'][0] is a tuple"),
        ({"counts": {1: "x"}}, "trace['counts'] has a int key 1"),
        ({"score": math.nan}, "trace['score'] is nan"),
        ([{"when": Opaque()}], "trace[0]['when'] is a Opaque"),
        (circular(), "trace['a'][0] contains itself"),
    ],
    ids=["set", "tuple", "int-key", "nan", "object", "circular"],
)
def test_a_trace_that_is_not_json_is_refused_with_its_path(trace: object, message: str) -> None:
    with pytest.raises(PayloadError, match=message.replace("[", r"\[").replace("]", r"\]")) as info:
        context_to_payload(ACEStepContext(trace=trace))
    assert info.value.field == "trace"
    assert info.value.path == message.split(" ")[0]


def test_metadata_that_is_not_json_is_refused_with_its_path() -> None:
    ctx = ACEStepContext(metadata={"run": {"started": Opaque()}})
    with pytest.raises(PayloadError, match=r"metadata\['run'\]\['started'\] is a Opaque") as info:
        context_to_payload(ctx)
    assert info.value.field == "metadata"


def test_samples_that_cannot_travel_are_refused() -> None:
    with pytest.raises(PayloadError, match=r"sample is a Opaque.*a Sample, a str or pathlib path, or a dict"):
        context_to_payload(with_sample(Opaque()))
    bad = Sample(question="q", metadata={"seen": {"x"}})
    with pytest.raises(PayloadError, match=r"sample\['metadata'\]\['seen'\] is a set"):
        context_to_payload(ACEStepContext(sample=bad))


def test_an_output_of_the_wrong_type_is_refused() -> None:
    with pytest.raises(PayloadError, match="reflection is a AgentOutput, expected ReflectorOutput"):
        context_to_payload(ACEStepContext(reflection=AGENT_OUTPUT))  # type: ignore[arg-type]


def test_find_non_json_accepts_json_and_shared_subtrees() -> None:
    shared = [1, 2]
    assert find_non_json({"a": shared, "b": shared, "c": [True, None, 1.5, "s"]}, "x") is None
    assert find_non_json([[[{"k": {1, 2}}]]], "x") == (
        "x[0][0][0]['k']",
        "is a set, which JSON cannot encode",
    )


# --- payloads that do not decode ---------------------------------------------------------------


@pytest.mark.parametrize("version", [2, 0, None, "1", True])
def test_an_unknown_format_version_is_refused(version: object) -> None:
    payload = context_to_payload(STAGES["trace"])
    payload["v"] = version
    with pytest.raises(PayloadError, match=f"payload format version {version!r} is not supported") as info:
        payload_to_context(payload, skillbook=None)
    assert info.value.field == "v"


def test_malformed_payloads_name_the_field() -> None:
    payload = context_to_payload(STAGES["reflection"])
    with pytest.raises(PayloadError, match="payload has no 'epoch' field"):
        payload_to_context({k: v for k, v in payload.items() if k != "epoch"}, skillbook=None)
    with pytest.raises(PayloadError, match="reflection is not a valid ReflectorOutput: reasoning"):
        payload_to_context({**payload, "reflection": {"key_insight": "x"}}, skillbook=None)
    with pytest.raises(PayloadError, match="sample has an unknown encoding"):
        payload_to_context({**payload, "sample": {"type": "pickle", "value": "x"}}, skillbook=None)
    with pytest.raises(PayloadError, match="epoch must be an int, got str"):
        payload_to_context({**payload, "epoch": "1"}, skillbook=None)


# --- check_trace -------------------------------------------------------------------------------


def test_check_trace_returns_the_size_of_a_trace_within_the_limit() -> None:
    assert check_trace({"a": "b"}, max_bytes=100) == len(b'{"a":"b"}')


def test_check_trace_refuses_a_trace_above_the_limit_with_its_size() -> None:
    trace = {"log": "x" * 2000}
    with pytest.raises(
        PayloadTooLarge, match=r"trace is 2,010 bytes as JSON, above the limit of 1,000 bytes"
    ) as info:
        check_trace(trace, max_bytes=1000)
    assert (info.value.size, info.value.limit) == (2010, 1000)
    assert isinstance(info.value, PayloadError)


def test_check_trace_refuses_a_trace_that_is_not_json() -> None:
    with pytest.raises(PayloadError, match=r"trace\['tags'\] is a set"):
        check_trace({"question": "q", "tags": {"a", "b"}}, max_bytes=10_000)


# --- the claim check (real Redis) --------------------------------------------------------------


def test_a_one_mib_trace_travels_as_a_claim(claims: ClaimCheck, redis_client: redis.Redis) -> None:
    defaults = WorkerSettings()  # 256 KiB threshold
    default = ClaimCheck(
        redis_client,
        threshold_bytes=defaults.claim_check_bytes,
        ttl_seconds=defaults.claim_check_ttl_seconds,
        prefix=claims.prefix,
    )
    trace = {"events": [{"i": i, "log": "y" * 1024} for i in range(1024)]}
    ctx = STAGES["reflection"].replace(trace=trace)
    payload, back = round_trip(ctx, default)
    assert payload["claimed"] == ["trace"]
    key = payload["trace"]["claim"]
    assert key.startswith(f"{claims.prefix}:claim:")
    assert payload["trace"]["bytes"] > 1024 * 1024
    assert len(json.dumps(payload)) < 4096
    assert back == ctx
    assert 0 < redis_client.ttl(key) <= defaults.claim_check_ttl_seconds


def test_a_small_trace_stays_in_the_message(claims: ClaimCheck) -> None:
    payload, back = round_trip(STAGES["trace"], claims)
    assert payload["claimed"] == []
    assert payload["trace"] == TRACE
    assert back == STAGES["trace"]


def test_a_large_sample_is_claimed_too(claims: ClaimCheck) -> None:
    sample = Sample(question="q" * 5000, context="c")
    payload, back = round_trip(ACEStepContext(sample=sample, trace={"small": True}), claims)
    assert payload["claimed"] == ["sample"]
    assert back.sample == sample
    assert back.trace == {"small": True}


def test_a_claim_is_still_there_after_it_was_read_and_is_reused(
    claims: ClaimCheck, redis_client: redis.Redis
) -> None:
    ctx = ACEStepContext(trace=["z" * 5000])
    first = context_to_payload(ctx, claims=claims)
    # A redelivered task reads it again; the next step encodes the same trace again.
    assert payload_to_context(first, skillbook=None, claims=claims) == ctx
    assert payload_to_context(first, skillbook=None, claims=claims) == ctx
    again = context_to_payload(ctx, claims=claims)
    assert again["trace"] == first["trace"]
    assert list(redis_client.scan_iter(match=f"{claims.prefix}:claim:*")) == [
        first["trace"]["claim"].encode()
    ]


def test_a_trace_that_looks_like_a_claim_is_not_taken_for_one(claims: ClaimCheck) -> None:
    ctx = ACEStepContext(trace={"claim": "ace:claim:nothing", "bytes": 3})
    _, back = round_trip(ctx, claims)
    assert back == ctx


def test_an_expired_claim_is_an_error_naming_its_key(claims: ClaimCheck, redis_client: redis.Redis) -> None:
    payload = context_to_payload(ACEStepContext(trace=["z" * 5000]), claims=claims)
    key = payload["trace"]["claim"]
    redis_client.delete(key)
    with pytest.raises(
        ClaimMissing, match=f"claim '{key}' holding trace is not in Redis: it expired"
    ) as info:
        payload_to_context(payload, skillbook=None, claims=claims)
    assert (info.value.key, info.value.field) == (key, "trace")
    assert isinstance(info.value, PayloadError)


def test_a_claimed_payload_needs_a_claim_check(claims: ClaimCheck) -> None:
    payload = context_to_payload(ACEStepContext(trace=["z" * 5000]), claims=claims)
    with pytest.raises(PayloadError, match="no ClaimCheck was given"):
        payload_to_context(payload, skillbook=None)


def test_without_a_claim_check_large_values_stay_inline() -> None:
    trace = ["z" * 300_000]
    payload = context_to_payload(ACEStepContext(trace=trace))
    assert payload["claimed"] == []
    assert payload["trace"] == trace


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"threshold_bytes": -1}, "threshold_bytes must be an int >= 0"),
        ({"ttl_seconds": 0}, "ttl_seconds must be an int >= 1"),
        ({"ttl_seconds": 1.5}, "ttl_seconds must be an int >= 1"),
    ],
)
def test_claim_check_settings_are_checked(
    redis_client: redis.Redis, options: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        ClaimCheck(redis_client, **{"threshold_bytes": 1024, "ttl_seconds": 60, **options})


# --- claims and limits a crafted payload cannot get around (real Redis) ------------------------


def keys_read(redis_client: redis.Redis) -> int:
    """How many key lookups the server has answered (hits and misses): any read of any key counts."""
    stats = redis_client.info("stats")
    return int(stats["keyspace_hits"]) + int(stats["keyspace_misses"])


def gets_sent(redis_client: redis.Redis) -> int:
    """How many GET commands the server has run."""
    return int(redis_client.info("commandstats").get("cmdstat_get", {}).get("calls", 0))


def claimed_trace(ref: dict[str, Any]) -> dict[str, Any]:
    """A payload whose trace is claimed under ``ref``, as a crafted message could carry it."""
    payload = context_to_payload(ACEStepContext(trace={"small": True}))
    return {**payload, "trace": ref, "claimed": ["trace"]}


def not_claim_keys(prefix: str) -> list[str]:
    digest = "ab" * 32
    return [
        "secretkey",
        f"{prefix}:{{sb:book}}:skills",
        f"{prefix}:claim:{digest.upper()}",  # hexdigest() writes lowercase
        f"{prefix}:claim:{digest[:-1]}",
        f"{prefix}:claim:{digest}:x",
        f"other:claim:{digest}",
        f"x{prefix}:claim:{digest}",
    ]


def test_a_claim_reference_that_is_not_a_claim_key_is_refused_naming_the_field(
    claims: ClaimCheck, redis_client: redis.Redis
) -> None:
    for key in not_claim_keys(claims.prefix):
        with pytest.raises(PayloadError, match="is not a claim key") as info:
            payload_to_context(claimed_trace({"claim": key, "bytes": 10}), skillbook=None, claims=claims)
        assert info.value.field == "trace", key


def test_a_claim_reference_that_is_not_a_claim_key_is_never_read(
    claims: ClaimCheck, redis_client: redis.Redis
) -> None:
    redis_client.set("secretkey", json.dumps("the secret"))
    before = keys_read(redis_client)
    for key in not_claim_keys(claims.prefix):
        with pytest.raises(PayloadError):
            payload_to_context(claimed_trace({"claim": key, "bytes": 10}), skillbook=None, claims=claims)
    assert keys_read(redis_client) == before


def test_a_claim_whose_value_does_not_hash_to_its_key_is_refused_naming_the_key(
    claims: ClaimCheck, redis_client: redis.Redis
) -> None:
    key = claims.key_for(b'"what the producer stored"')
    redis_client.set(key, b'"something else"')
    with pytest.raises(PayloadError, match=f"claim '{key}' holding trace does not hash to") as info:
        payload_to_context(claimed_trace({"claim": key, "bytes": 16}), skillbook=None, claims=claims)
    assert info.value.field == "trace"


def test_a_claim_key_holding_another_type_is_a_payload_error(
    claims: ClaimCheck, redis_client: redis.Redis
) -> None:
    key = claims.key_for(b"[1]")
    redis_client.hset(key, "a", "b")
    with pytest.raises(PayloadError, match=f"claim '{key}' holding trace is not a string"):
        payload_to_context(claimed_trace({"claim": key, "bytes": 3}), skillbook=None, claims=claims)


def test_an_inline_trace_above_the_limit_is_refused_with_its_size_and_the_limit() -> None:
    payload = context_to_payload(ACEStepContext(trace=["z" * 5000]))
    with pytest.raises(PayloadTooLarge, match="ACE_MAX_TRACE_BYTES") as info:
        payload_to_context(payload, skillbook=None, max_trace_bytes=1000)
    assert (info.value.field, info.value.size, info.value.limit) == ("trace", 5004, 1000)


def test_a_trace_at_the_limit_is_accepted_inline_and_claimed(claims: ClaimCheck) -> None:
    ctx = ACEStepContext(trace=["z" * 5000])
    inline = context_to_payload(ctx)
    claimed = context_to_payload(ctx, claims=claims)
    assert payload_to_context(inline, skillbook=None, max_trace_bytes=5004) == ctx
    assert payload_to_context(claimed, skillbook=None, claims=claims, max_trace_bytes=5004) == ctx


def test_a_claimed_trace_above_the_limit_is_refused_without_being_read(
    claims: ClaimCheck, redis_client: redis.Redis
) -> None:
    payload = context_to_payload(ACEStepContext(trace=["z" * 5000]), claims=claims)
    # The reference understates the size: the length in Redis is checked before any GET.
    payload["trace"]["bytes"] = 10
    before = gets_sent(redis_client)
    with pytest.raises(PayloadTooLarge, match="5,004 bytes as JSON \\(in Redis\\)") as info:
        payload_to_context(payload, skillbook=None, claims=claims, max_trace_bytes=1000)
    assert (info.value.field, info.value.size, info.value.limit) == ("trace", 5004, 1000)
    assert gets_sent(redis_client) == before


def test_a_claim_reference_declaring_a_size_above_the_limit_is_refused_before_any_read(
    claims: ClaimCheck, redis_client: redis.Redis
) -> None:
    payload = context_to_payload(ACEStepContext(trace=["z" * 5000]), claims=claims)
    before = keys_read(redis_client)
    with pytest.raises(PayloadTooLarge, match="as its claim reference says"):
        payload_to_context(payload, skillbook=None, claims=claims, max_trace_bytes=1000)
    assert keys_read(redis_client) == before


def test_a_claimed_sample_is_not_held_to_the_trace_limit(claims: ClaimCheck) -> None:
    ctx = ACEStepContext(sample=Sample(question="q" * 5000, context="c"), trace={"small": True})
    payload = context_to_payload(ctx, claims=claims)
    assert payload_to_context(payload, skillbook=None, claims=claims, max_trace_bytes=1000) == ctx


def test_the_claim_check_reads_no_key_but_its_own(claims: ClaimCheck, redis_client: redis.Redis) -> None:
    redis_client.set("secretkey", json.dumps("the secret"))
    with pytest.raises(ValueError, match="'secretkey' is not a claim key"):
        claims.get("secretkey")
    with pytest.raises(ValueError, match="'secretkey' is not a claim key"):
        claims.size("secretkey")

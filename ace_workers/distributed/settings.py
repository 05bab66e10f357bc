"""WorkerSettings: every option of the producers and workers, loaded from ``ACE_*`` variables.

The environment is read in :meth:`WorkerSettings.from_env` (through the one reader,
:mod:`ace_workers.env`) and nowhere else, never at import time. A misspelled
``ACE_*`` variable fails loudly with the closest known name instead of being silently
ignored. URL schemes and forms are :mod:`.connections`'.
"""

from __future__ import annotations

import dataclasses
import math
import re
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..core.prompt_budget import PromptBudget
from ..core.skill_lookup import LOOKUP_MODES, LOOKUP_SIMILAR, SkillLookup
from ..env import environment, read_env_fields
from ..observability.logs import LOG_FORMATS
from ..protocols.deduplication import PruneRule
from ..redaction.errors import RedactionSpecError
from ..redaction.spec import RedactionSpec, parse_redaction_spec
from .connections import AMQP_SCHEMES, CLUSTER_SCHEMES, REDIS_SCHEMES, redact_url, url_problem
from .errors import InvalidSettingError
from .recipe_registry import BUILT_IN_RECIPES, recipe_target_problem
from .store.keys import validate_key_prefix, validate_skillbook_name
from .store.label_names import validate_label
from .tenancy.model_limits import ModelLimits, parse_model_limits

if TYPE_CHECKING:
    from .store.retention import RetentionPolicy

__all__ = [
    # settings
    "WorkerSettings",
    "ENV_PREFIX",
    "QUEUE_ROLES",
    "SIM_MODEL",
    "IGNORED_PREFIXES",
    "env_name",
    # queues
    "write_partition",
]

ENV_PREFIX = "ACE_"
SIM_MODEL = "sim"
QUEUE_ROLES = ("execute", "learn", "write")
DEDUP_OFF = "off"
DEDUP_PROVIDERS = (DEDUP_OFF, "sentence_transformers", "litellm")
REFLECTORS = ("single", "rr")

# ACE_* variables that belong to another part of the project, not to the workers: the MCP
# server's (ACE_MCP_*, checked for typos by its own settings).
IGNORED_PREFIXES = ("ACE_MCP_",)
# ... and the command line's own: ACE_ACTOR, who acts by hand (review decisions, pins, label
# moves), read as the default of every command's --actor option.
CLI_VARIABLES = frozenset({"ACE_ACTOR"})
# Settings that were, and what does their job now: one set is refused naming it (the console's
# own users and tokens gave way to API keys, one credential for the console, MCP and the CLI).
RETIRED_SETTINGS = {
    "ACE_CONSOLE_BASIC_AUTH": (
        "the console signs people in with API keys: create one with "
        "`ace-workers key create '*' --role admin --note ops` and give its secret as the password"
    ),
    "ACE_CONSOLE_TOKENS": (
        "the console takes API keys as bearer tokens: create one with "
        "`ace-workers key create '*' --role admin --note ops` and send it as `Authorization: Bearer KEY`"
    ),
}
# OpenTelemetry's standard collector variable: the default of ACE_OTLP_ENDPOINT.
OTEL_ENDPOINT_VARIABLE = "OTEL_EXPORTER_OTLP_ENDPOINT"

# Names people reach for when they mean the simulator; a typo here would otherwise be
# sent to litellm as a model name and fail only at the first call, on a worker.
_SIM_LOOKALIKES = frozenset({"simulated", "simulator", "simulation", "fake", "mock", "offline"})
_MODEL_SPEC = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:/@+-]*")
_IMPORT_PATH = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*:[A-Za-z_][A-Za-z0-9_.]*")
_RECIPE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")


# Every numeric setting is at most this (the configuration reference says so): the largest
# default is 16 MiB, and a value of 400 digits would overflow the arithmetic that uses it.
MAX_SETTING_NUMBER = 10**9


def _setting(
    default: Any, help: str, *, minimum: float | None = 0, positive: bool = False, default_text: str = ""
) -> Any:
    """A numeric field: its help text, and its bounds in the metadata that __post_init__ checks."""
    metadata = {
        **_help(help, default_text),
        "minimum": minimum,
        "maximum": MAX_SETTING_NUMBER,
        "positive": positive,
    }
    return field(default=default, metadata=metadata)


def _option(default: Any, help: str, *, default_text: str = "", secret: bool = False) -> Any:
    """A field that is not a number, with its help text; a secret one stays out of the settings' repr."""
    # A secret (a password in a URL, a token, an API key) must not reach logs through the repr.
    return field(default=default, repr=not secret, metadata=_help(help, default_text))


def _help(help: str, default_text: str) -> dict[str, str]:
    """The metadata the configuration reference reads: what a setting does and, where the
    default alone would not say it (unset, computed), what the default means."""
    return {"help": help, "default_text": default_text} if default_text else {"help": help}


# What ``ace-workers key create`` prints (tenancy/api_keys.py): checked here for its shape only.
_API_KEY = re.compile(r"ace_[0-9a-f]{8,32}_[A-Za-z0-9_-]{20,200}")


def _check_api_key(value: str | None) -> None:
    """InvalidSettingError naming ACE_API_KEY unless it is unset or shaped like a key."""
    if value is not None and _API_KEY.fullmatch(value) is None:
        # The value is a secret: the error names the variable and the format, never the value.
        raise InvalidSettingError(
            env_name("api_key"),
            "(hidden)",
            "not an API key: expected ace_<id>_<secret> from ace-workers key create",
        )


@dataclass(frozen=True)
class WorkerSettings:
    """Options of producers and workers; each is read from ``ACE_<FIELD NAME IN UPPER CASE>``.

    Each field's help text (its ``help`` metadata) says what it does; the configuration
    reference of the docs (docs/reference/configuration.md) is generated from them.
    """

    redis_url: str | None = _option(
        None,
        "redis://, rediss://, unix:// or redis+socket:// URL of Redis",
        default_text="unset: embedded Redis",
        secret=True,
    )
    broker_url: str | None = _option(
        None,
        "the task broker: amqp:// or amqps:// for RabbitMQ (quorum queues, publisher confirms); Redis "
        "stays the skillbook store and the batch ledger",
        default_text="unset: the Redis of ACE_REDIS_URL",
        secret=True,
    )
    store_url: str | None = _option(
        None,
        "the Redis of the skillbook store, batches, inbox, dead letters and caches; "
        "`redis+cluster://HOST:PORT` (`rediss+cluster://` with TLS) for Redis Cluster. The broker and "
        "the result backend stay on ACE_REDIS_URL (or ACE_BROKER_URL)",
        default_text="unset: ACE_REDIS_URL",
        secret=True,
    )
    embedded_redis_dir: str | None = _option(
        None,
        "with ACE_REDIS_URL unset, a folder (created if missing) where the embedded Redis keeps its "
        "data across runs: `learn` with it set, then `skillbook show` with the same folder, sees what "
        "was learned. One process at a time uses a folder; commands that need a shared Redis (status, "
        "skillbook, dead-letters, nightly, batch) accept it in place of ACE_REDIS_URL",
        default_text="unset: the embedded Redis is a scratch one, thrown away when the command ends",
    )
    queue_prefix: str = _option("ace", "prefix of the queue names and Redis keys")
    write_partitions: int = _setting(
        1,
        "write queues `PREFIX.write.0` .. `N-1`, a skillbook's writes on the one its name hashes to, "
        "each served by one single-thread writer; 1: the one `PREFIX.write`",
        minimum=1,
    )
    agent_model: str = _option(
        SIM_MODEL, 'model of the Agent: "sim" (simulated LLM) or a litellm model string'
    )
    reflector_model: str = _option(SIM_MODEL, "model of the Reflector, same forms")
    skill_manager_model: str = _option(SIM_MODEL, "model of the SkillManager, same forms")
    reflector: str = _option(
        "single",
        '"single" (one structured call) or "rr" (the Recursive Reflector: the model writes code that '
        "a process sandbox runs, `ace_workers.rr`)",
    )
    rr_max_iterations: int = _setting(10, 'with "rr", its LLM turns', minimum=1)
    rr_timeout_seconds: float = _setting(
        10.0, 'with "rr", each sandbox run\'s wall-clock limit', positive=True
    )
    rr_memory_mb: int = _setting(512, 'with "rr", each sandbox run\'s address space', minimum=64)
    rr_unsafe_sandbox: bool = _option(
        False,
        'true lets "rr" run where its OS boundary (bubblewrap, libseccomp, namespaces) cannot be set '
        "up, behind the in-process guards only; false: such a worker refuses to start, naming what is "
        "missing",
    )
    llm_factory: str | None = _option(
        None, '"package.module:callable" returning an LLMClientLike for a model name'
    )
    recipes: str = _option(
        "",
        "recipes of your own a worker may run, besides the built-in `ace` and `trace_analyser`: "
        "`name=package.module:function,...`, each imported when the settings are built (a path that "
        "does not import is refused then). A task names its recipe; a name configured nowhere is "
        "refused, never imported",
    )
    llm_max_retries: int = _setting(3, "attempts per structured LLM call before RetriesExhausted", minimum=1)
    llm_timeout_seconds: float = _setting(60.0, "timeout of one LLM request", positive=True)
    task_max_retries: int = _setting(3, "Celery retries of a step after an LLM rate limit or timeout")
    retry_backoff_seconds: float = _setting(2.0, "first retry delay of a step; doubles on each retry")
    visibility_timeout_seconds: int = _setting(
        3600, "seconds until an unacked task is redelivered; > slowest step", minimum=1
    )
    max_redrives: int = _setting(
        3,
        "times the reconciler sends again a sample that made no progress for the visibility timeout "
        "plus the retry backoff, before it fails and is dead-lettered",
    )
    reconcile_interval_seconds: float = _setting(
        60.0, "how often beat (and a waiting producer) run the reconciler", positive=True
    )
    worker_wait_seconds: float = _setting(
        300.0,
        "how long a producer waiting for its batch (BatchHandle.wait, learn and enqueue --wait) goes on "
        "while no worker serves a queue the batch needs, before it fails with NoWorkersError: workers "
        "that restart (a rolling deploy, a replaced pod) or start from zero (KEDA scaling learn "
        "workers up from none) come back within it. It logs one warning naming the queues when the "
        "gap begins",
        positive=True,
    )
    admission_window: int = _setting(
        64,
        "most samples in flight (sent and unfinished) across the whole fleet; batches' samples are "
        "admitted as slots free, shared between tenants with work by their weight and capped by their "
        "max_in_flight, so the queues stay short and one tenant's big batch never sits ahead of "
        "another's samples. Set it to about twice the threads of the fleet's learn and execute "
        "workers together; fewer leaves workers idle (finishing samples grant slots once half the "
        "window is free, so between half and all of it is in flight). 0 turns admission off: every "
        "sample is sent at once, first come first served",
        default_text="64: twice the 32 threads of a small fleet, two workers of 16",
    )
    worker_stall_seconds: float = _setting(
        300.0,
        "a worker whose queue holds messages while it received, started and finished none for this "
        "long has stopped consuming: it says so on /healthz and exits (status 75) so its supervisor "
        "restarts it; > slowest step",
        positive=True,
    )
    claim_check_bytes: int = _setting(
        256 * 1024, "larger payloads go to Redis; the message carries a reference", minimum=1
    )
    claim_check_ttl_seconds: int = _setting(
        7 * 24 * 3600, "lifetime of a claim-checked payload in Redis", minimum=1
    )
    max_trace_bytes: int = _setting(
        16 * 1024 * 1024,
        "largest trace accepted at enqueue, and by a worker from a message (inline or claim-checked)",
        minimum=1,
    )
    max_batch_size: int = _setting(1_000_000, "most inputs one batch may hold", minimum=1)
    intake_max_body_bytes: int = _setting(
        32 * 1024 * 1024,
        "largest request body `ace-workers intake` reads (POST /v1/traces); a bigger one is refused "
        "with 413 before it is parsed",
        minimum=1,
    )
    intake_max_backlog: int = _setting(
        10_000,
        "most samples waiting for admission before `ace-workers intake` refuses new batches with 429 "
        "and Retry-After: it refuses only while the admission window is full too, so producers back "
        "off while the fleet is saturated. 0: never refuse (admission off: never refused either)",
    )
    max_skillbook_skills: int = _setting(100_000, "most skills one skillbook may hold", minimum=1)
    changelog_maxlen: int = _setting(
        10_000, "entries kept in a skillbook's change log (approximate cap)", minimum=1
    )
    provenance_keep: int = _setting(
        5,
        "occurrences each skill keeps (where its ADD, UPDATEs, TAGs and merges came from: batch, "
        "sample, trace id, recipe, insight, actor, time): its origin and the newest; totals count "
        "them all",
        minimum=1,
    )
    skillbook_cache_size: int = _setting(
        256,
        "most skillbooks a process keeps loaded (each one's skills and its recipes' pipelines); the "
        "least recently used is dropped, and loaded again from Redis when next used",
        minimum=1,
    )
    dedup_interval: int = _setting(10, "run deduplication every this many samples", minimum=1)
    dedup_provider: str = _option(
        "off",
        'embeddings for deduplication: "sentence_transformers" (local), "litellm" (remote), or "off"; '
        "when on, learning chains end with a DeduplicateStep and the nightly job deduplicates",
    )
    dedup_model: str = _option("all-MiniLM-L6-v2", "the embedding model")
    dedup_threshold: float = _setting(
        0.85, "cosine similarity from which two skills are a pair to consolidate", positive=True
    )
    dedup_auto_merge_threshold: float = _setting(
        0.97,
        "pairs at least this similar that the LLM leaves undecided are merged into the older skill",
        positive=True,
    )
    dedup_across_sections: bool = _option(
        False,
        "true (1, yes, on) compares skills of different sections too; false compares a section with "
        "itself only",
    )
    prune_harmful_margin: int = _setting(
        0,
        "deduplication also soft-deletes skills whose harmful votes exceed their helpful ones by this "
        "many; 0 is off",
    )
    prune_min_tags: int = _setting(5, "votes a skill needs before it can be pruned", minimum=1)
    prompt_max_skills: int = _setting(
        200,
        "most skills an Agent or SkillManager prompt shows; a bigger skillbook shows the ones most "
        "relevant to the task (by embeddings when ACE_DEDUP_PROVIDER is on, else by shared words); 0 "
        "lifts the bound",
    )
    prompt_max_chars: int = _setting(40_000, "most characters of the skills table in one prompt; 0 lifts it")
    skill_lookup: str = _option(
        LOOKUP_SIMILAR,
        "how the SkillManager looks for the skill a learning restates beyond its prompt's skills: "
        '"similar" adds the ACE_SKILL_LOOKUP_K skills most like each learning, and the pending review '
        'proposals like it, to its prompt; "tools" lets it call search_skills and read_skill (at most '
        'ACE_SKILL_LOOKUP_MAX_CALLS calls, each turn an LLM call metered like any other); "off" shows '
        "the prompt's skills only",
    )
    skill_lookup_k: int = _setting(
        8,
        "skills (and pending proposals) a lookup shows at most; with tools, the largest k of a search",
        minimum=1,
    )
    skill_lookup_max_calls: int = _setting(
        4, 'with ACE_SKILL_LOOKUP="tools", the most tool calls of one SkillManager decision', minimum=1
    )
    checkpoint_interval: int = _setting(10, "write a checkpoint every this many samples", minimum=1)
    result_ttl_seconds: int = _setting(
        24 * 3600,
        "lifetime of task results, and of batch records once their batch finished (a running batch's "
        "records never expire)",
        minimum=1,
    )
    retention_dead_letter_days: float = _setting(
        30.0,
        "days a dead letter stays parked before the nightly sweep drops it (`ace-workers retention`); "
        "0 keeps them forever",
    )
    retention_proposal_days: float = _setting(
        90.0,
        "days a decided (approved or rejected) proposal is kept after its decision; pending proposals "
        "are never dropped; 0 keeps them forever",
    )
    retention_audit_days: float = _setting(
        365.0, "days an entry of the console's audit log is kept; 0 keeps them forever"
    )
    retention_label_moves: int = _setting(
        1000, "newest label moves kept in each skillbook's label log; 0 keeps them all"
    )
    retention_evaluations: int = _setting(
        200, "newest evaluation reports kept per skillbook; 0 keeps them all"
    )
    retention_erasure_days: float = _setting(
        3650.0,
        "days an erasure record (`ace-workers forget`: who, when, selector, counts) is kept; 0 keeps "
        "them forever",
    )
    sim_latency_seconds: float = _setting(0.0, "seconds each simulated LLM call sleeps")
    sim_trust_threshold: int = _setting(3, "net helpful votes before the simulated agent applies a skill")
    sim_paraphrase: bool = _option(
        False,
        "true (1, yes, on): the simulated Reflector states each learned rule in words chosen per sample "
        "(one of several wordings), so restatements of a rule are different strings, as a real model's "
        "are; false: always the one canonical sentence",
    )
    sim_failure_rate: float = _setting(
        0.0, "share (0 to 1) of simulated LLM calls that fail, for failure drills"
    )
    sim_failure: str = _option(
        "rate_limit", 'how they fail: "rate_limit" (a 429) or "error" (a provider error)'
    )
    sim_cost_per_1k_tokens: float = _setting(
        0.0,
        "USD the simulated LLM says each 1000 tokens cost (its outputs' `raw` carries the cost), for "
        "cost budgets in drills and tests; 0 prices nothing",
    )
    model_limits: str = _option(
        "",
        "the providers' limits the whole fleet keeps to, per model: `MODEL=rpm:N,tpm:N,burst:S;...` "
        "(e.g. `openai/gpt-4o-mini=rpm:500,tpm:200000;sim=rpm:600`), requests and tokens per minute "
        "(either or both) and the seconds of traffic that may go at once after a quiet spell [burst "
        "0: evenly spaced]. Shared by every tenant through the LLM limiter in Redis; a provider's 429 "
        "slows a model for everyone, configured here or not",
        default_text="unset: none",
    )
    redact: str = _option(
        "default",
        "what is redacted from traces before they are stored or prompted, as comma-separated entries: "
        "`default` (secret, email, card, phone), `off`, a kind to add (`ipv4`, `ipv6`, `iban`) or "
        "remove (`-phone`), `phone:GB` for national numbers of another region, and custom kinds "
        "`NAME=REGEX` (see docs/redaction.md); a tenant's `--redact` replaces it for its skillbooks",
    )
    redis_connect_timeout_seconds: float = _setting(
        3.0, "timeout of one connection attempt to Redis", positive=True
    )
    redis_socket_timeout_seconds: float = _setting(
        10.0, "timeout of one Redis command on an open connection", positive=True
    )
    redis_connect_retries: int = _setting(
        3, "reconnection attempts (broker and result backend) before failing"
    )
    worker_reply_seconds: float = _setting(
        3.0,
        "how long `enqueue`, `learn`, `status`, `nightly run` and `hook --now` wait for the workers "
        "to say which queues they serve; a queue that no worker serves costs the whole wait, as a "
        "broadcast cannot know who would answer",
        positive=True,
    )
    log_format: str = _option(
        "text",
        'worker log lines: "text", or "json" (one object per line); a line logged while a step runs '
        "carries its batch id, sample, skillbook and step in both; `ace-workers worker --log-format` "
        "overrides it",
    )
    log_tracebacks: bool = _option(
        False,
        "true (1, yes, on): a worker logs the traceback of every failed step (on Celery's `raised` "
        "line); false: a failed step is one line, and its traceback is logged once per batch and "
        "error kind, at DEBUG",
    )
    nightly_skillbooks: str = _option("", "comma-separated skillbooks `ace-workers beat` learns nightly")
    nightly_schedule: str = _option("0 2 * * *", "when: a 5-field crontab in UTC, or a number of seconds")
    nightly_epochs: int = _setting(1, "epochs of the nightly pass over the inbox", minimum=1)
    nightly_max_traces: int = _setting(
        100_000, "most inbox traces one nightly run takes; the rest wait", minimum=1
    )
    nightly_max_stalls: int = _setting(
        2,
        "nightly runs in a row a batch may stall (no progress) before the run abandons it: its "
        "unfinished samples are dead-lettered and the run reports it",
        minimum=1,
    )
    nightly_dir: str | None = _option(
        None, "folder for the nightly checkpoint and markdown export", default_text="unset: none written"
    )
    nightly_lock_seconds: int = _setting(
        600, "lifetime of the nightly lock, renewed while a run is alive", minimum=1
    )
    flower_basic_auth: str | None = _option(
        None,
        '"user:password" (comma-separated for several) `ace-workers flower` requires unless started '
        "with `--no-auth`",
        secret=True,
    )
    flower_url: str | None = _option(
        None,
        "where people reach Flower (`ace-workers flower`), e.g. `https://flower.internal`: the "
        "console's fleet page links to it",
        default_text="unset: no link",
    )
    api_key: str | None = _option(
        None,
        "the API key a producer presents (`ace-workers key create`): it then refuses, before anything "
        "is sent, a skillbook the key's tenant does not own or a key whose role is below `learn`; "
        "never shown in the settings' repr",
        default_text="unset: no key checked",
        secret=True,
    )
    otlp_endpoint: str | None = _option(
        None,
        "OpenTelemetry collector (OTLP/HTTP base URL, e.g. `http://collector:4318`) workers send "
        "their traces to, one trace per sample; `ace-workers worker --otlp-endpoint` overrides it",
        default_text="unset: `OTEL_EXPORTER_OTLP_ENDPOINT`, else no tracing",
    )
    serve_label: str | None = _option(
        None,
        "the label (`prod`, any name) whose version a producer's samples are served by when the "
        "skillbook is named without one (`support`, not `support@prod`); learning still writes the "
        "head. Read where samples are sent, for recipes that run an agent",
        default_text="unset: the head",
    )
    canary_share: float = _setting(
        0.0,
        "share (0 to 1) of those samples served by the `canary` label instead, chosen per sample by a "
        "hash of batch id and sample index; `--canary 10%` overrides it",
    )

    def __post_init__(self) -> None:
        for spec in dataclasses.fields(self):
            if "minimum" in spec.metadata:
                _check_number(spec, getattr(self, spec.name))
        _check_url("redis_url", self.redis_url, REDIS_SCHEMES)
        _check_url("broker_url", self.broker_url, (*AMQP_SCHEMES, *REDIS_SCHEMES))
        _check_url("store_url", self.store_url, (*REDIS_SCHEMES, *CLUSTER_SCHEMES))
        _check_api_key(self.api_key)
        if self.log_format not in LOG_FORMATS:
            formats = " or ".join(LOG_FORMATS)
            raise InvalidSettingError(env_name("log_format"), self.log_format, f"use {formats}")
        try:
            validate_key_prefix(self.queue_prefix)
        except ValueError as exc:
            raise InvalidSettingError(env_name("queue_prefix"), self.queue_prefix, str(exc)) from None
        for role in ("agent_model", "reflector_model", "skill_manager_model"):
            _check_model(env_name(role), getattr(self, role))
        _check_basic_auth("flower_basic_auth", self.flower_basic_auth)
        _check_url("flower_url", self.flower_url, ("http", "https"))
        _check_url("otlp_endpoint", self.otlp_endpoint, ("http", "https"))
        _check_nightly(self)
        if self.llm_factory is not None and not _IMPORT_PATH.fullmatch(self.llm_factory):
            raise InvalidSettingError(
                env_name("llm_factory"), self.llm_factory, "expected an import path 'package.module:callable'"
            )
        _check_sim_failure(self.sim_failure_rate, self.sim_failure)
        self.model_limits_map()  # a malformed ACE_MODEL_LIMITS fails here, at start
        self.redaction_spec()  # so does a malformed ACE_REDACT
        self.recipe_paths()  # a malformed ACE_RECIPES fails here, at start
        _check_choice("dedup_provider", self.dedup_provider, DEDUP_PROVIDERS)
        _check_choice("reflector", self.reflector, REFLECTORS)
        _check_choice("skill_lookup", self.skill_lookup, LOOKUP_MODES)
        _check_dedup(self)
        _check_serving(self)
        slowest = self.slowest_step_seconds()
        if self.worker_stall_seconds <= slowest:
            raise InvalidSettingError(
                env_name("worker_stall_seconds"),
                self.worker_stall_seconds,
                f"must exceed the slowest step ({slowest:g} s), or a worker busy with long steps looks stuck",
            )
        if self.visibility_timeout_seconds <= slowest:
            raise InvalidSettingError(
                env_name("visibility_timeout_seconds"),
                self.visibility_timeout_seconds,
                f"must exceed the slowest step ({slowest:g} s: one LLM call's timeout or simulated latency "
                "times ACE_LLM_MAX_RETRIES), or a task still running when it expires is delivered again",
            )

    def prompt_budget(self) -> PromptBudget | None:
        """The roles' prompt budget; None when both bounds are lifted (0)."""
        if not self.prompt_max_skills and not self.prompt_max_chars:
            return None
        return PromptBudget(
            max_skills=self.prompt_max_skills or None, max_chars=self.prompt_max_chars or None
        )

    def skill_lookup_config(self) -> SkillLookup:
        """The SkillManager's lookup: ACE_SKILL_LOOKUP, ACE_SKILL_LOOKUP_K, ACE_SKILL_LOOKUP_MAX_CALLS."""
        return SkillLookup(
            mode=self.skill_lookup, k=self.skill_lookup_k, max_calls=self.skill_lookup_max_calls
        )

    def retention_policy(self) -> RetentionPolicy:
        """How long each kind of record is kept (see store/retention.py)."""
        from .store.retention import RetentionPolicy  # the sweep's module loads redis: not for --help

        return RetentionPolicy(
            dead_letter_days=self.retention_dead_letter_days,
            proposal_days=self.retention_proposal_days,
            audit_days=self.retention_audit_days,
            label_moves=self.retention_label_moves,
            evaluations=self.retention_evaluations,
            erasure_days=self.retention_erasure_days,
        )

    def prune_rule(self) -> PruneRule | None:
        """The prune rule deduplication applies; None when ACE_PRUNE_HARMFUL_MARGIN is 0."""
        if not self.prune_harmful_margin:
            return None
        return PruneRule(min_tags=self.prune_min_tags, harmful_margin=self.prune_harmful_margin)

    def recipe_paths(self) -> dict[str, str]:
        """The recipes of ``ACE_RECIPES``: name -> import path ``package.module:function``.

        Raises:
            InvalidSettingError: an entry is not ``name=package.module:function``, a name
                repeats, a name is a built-in recipe's, or its function cannot be imported
                (a dotted attribute after the colon, a missing module or function).
        """
        variable = env_name("recipes")
        paths: dict[str, str] = {}
        for entry in (part.strip() for part in self.recipes.split(",")):
            if not entry:
                continue
            name, equals, path = (piece.strip() for piece in entry.partition("="))
            if not equals or not _RECIPE_NAME.fullmatch(name) or not _IMPORT_PATH.fullmatch(path):
                raise InvalidSettingError(
                    variable, self.recipes, f"{entry!r} is not 'name=package.module:function'"
                )
            if name in BUILT_IN_RECIPES or name in paths:
                raise InvalidSettingError(variable, self.recipes, f"recipe name {name!r} is taken")
            problem = recipe_target_problem(path)
            if problem is not None:
                raise InvalidSettingError(variable, self.recipes, f"recipe {name!r}: {problem}")
            paths[name] = path
        return paths

    def nightly_skillbook_names(self) -> list[str]:
        """The skillbooks the nightly job learns, in the order given."""
        return [name.strip() for name in self.nightly_skillbooks.split(",") if name.strip()]

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> WorkerSettings:
        """Settings from the ``ACE_*`` variables of ``environ`` (default: ``os.environ``), defaults elsewhere.

        Raises:
            UnknownSettingError: an ``ACE_*`` variable names no setting (the message suggests the closest).
            SettingsError: a value does not parse or is out of range (the message names the variable).
        """
        env = environment(environ)
        values = read_env_fields(
            cls, env, prefix=ENV_PREFIX, owner="WorkerSettings", skip=_not_ours, retired=RETIRED_SETTINGS
        )
        if "otlp_endpoint" not in values and env.get(OTEL_ENDPOINT_VARIABLE):
            values["otlp_endpoint"] = env[OTEL_ENDPOINT_VARIABLE]  # OpenTelemetry's standard variable
        return cls(**values)

    def queue_names(self) -> dict[str, str]:
        """The queue of each role: ``{"execute": "<prefix>.execute", "learn": ..., "write": ...}``.

        With write partitions, "write" names the partitions' common stem, not a queue:
        see :meth:`write_queues` and :meth:`write_queue`.
        """
        return {role: f"{self.queue_prefix}.{role}" for role in QUEUE_ROLES}

    def write_queues(self) -> list[str]:
        """Every write queue: ``PREFIX.write``, or ``PREFIX.write.0`` .. ``.N-1`` with N partitions."""
        stem = self.queue_names()["write"]
        if self.write_partitions == 1:
            return [stem]
        return [f"{stem}.{partition}" for partition in range(self.write_partitions)]

    def write_queue(self, skillbook: str) -> str:
        """The write queue of ``skillbook``: its one writer's."""
        return self.write_queues()[write_partition(skillbook, self.write_partitions)]

    def all_queues(self) -> list[str]:
        """Every queue workers serve: execute, learn and each write queue."""
        names = self.queue_names()
        return [names["execute"], names["learn"], *self.write_queues()]

    def model_limits_map(self) -> dict[str, ModelLimits]:
        """ACE_MODEL_LIMITS by model; InvalidSettingError naming what is wrong."""
        try:
            return parse_model_limits(self.model_limits)
        except ValueError as exc:
            raise InvalidSettingError(env_name("model_limits"), self.model_limits, str(exc)) from None

    def redaction_spec(self) -> RedactionSpec:
        """What ACE_REDACT says to redact; InvalidSettingError naming the bad entry."""
        try:
            return parse_redaction_spec(self.redact)
        except RedactionSpecError as exc:
            raise InvalidSettingError(env_name("redact"), self.redact, str(exc)) from None

    def models(self) -> dict[str, str]:
        """The model of each LLM role."""
        return {
            "agent": self.agent_model,
            "reflector": self.reflector_model,
            "skill_manager": self.skill_manager_model,
        }

    def slowest_step_seconds(self) -> float:
        """An upper estimate of one step's run time: its LLM call, every attempt timing out."""
        per_call = max(
            self.sim_latency_seconds if model == SIM_MODEL else self.llm_timeout_seconds
            for model in self.models().values()
        )
        return per_call * self.llm_max_retries


def env_name(field_name: str) -> str:
    """The environment variable of a WorkerSettings field."""
    return f"{ENV_PREFIX}{field_name.upper()}"


# -- checking -------------------------------------------------------------------------


def _check_serving(settings: WorkerSettings) -> None:
    """ACE_SERVE_LABEL names a label; ACE_CANARY_SHARE is a share from 0 to 1."""
    if settings.serve_label is not None:
        try:
            validate_label(settings.serve_label)
        except ValueError as exc:
            raise InvalidSettingError(env_name("serve_label"), settings.serve_label, str(exc)) from None
    if settings.canary_share > 1:
        raise InvalidSettingError(
            env_name("canary_share"), settings.canary_share, "a share is from 0 to 1 (0.1 for 10%)"
        )


def _not_ours(variable: str) -> bool:
    return variable.startswith(IGNORED_PREFIXES) or variable in CLI_VARIABLES


def _check_number(spec: dataclasses.Field[Any], value: object) -> None:
    variable = env_name(spec.name)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidSettingError(variable, value, "expected a number")
    if str(spec.type) == "int" and not isinstance(value, int):
        raise InvalidSettingError(variable, value, "expected an integer")
    if isinstance(value, float) and not math.isfinite(value):  # an int is; isfinite(10**400) overflows
        raise InvalidSettingError(variable, value, "expected a finite number")
    if value > spec.metadata["maximum"]:
        raise InvalidSettingError(
            variable, _shown_number(value), f"must be at most {spec.metadata['maximum']:.0e}"
        )
    minimum = spec.metadata["minimum"]
    if spec.metadata["positive"] and value <= 0:
        raise InvalidSettingError(variable, value, "must be greater than 0")
    if minimum is not None and value < minimum:
        raise InvalidSettingError(variable, value, f"must be at least {minimum}")


def _shown_number(value: float) -> str:
    """A number for an error line: one of 400 digits is shown by its length."""
    text = str(value)
    return text if len(text) <= 40 else f"{text[:20]}... ({len(text)} digits)"


def _check_choice(name: str, value: object, choices: tuple[str, ...]) -> None:
    if value not in choices:
        raise InvalidSettingError(env_name(name), value, f"use one of {', '.join(choices)}")


def _check_model(variable: str, model: object) -> None:
    if not isinstance(model, str) or not _MODEL_SPEC.fullmatch(model):
        raise InvalidSettingError(
            variable,
            model,
            f"unknown model spec: use {SIM_MODEL!r} for the simulated LLM or a litellm model string "
            "such as 'openai/gpt-4o-mini' (no spaces)",
        )
    if model != SIM_MODEL and (model.lower() == SIM_MODEL or model.lower() in _SIM_LOOKALIKES):
        raise InvalidSettingError(
            variable, model, f"unknown model spec; did you mean {SIM_MODEL!r} (the simulated LLM)?"
        )


def _check_nightly(settings: WorkerSettings) -> None:
    for name in settings.nightly_skillbook_names():
        try:
            validate_skillbook_name(name)
        except ValueError as exc:
            raise InvalidSettingError(env_name("nightly_skillbooks"), name, str(exc)) from None
    schedule = settings.nightly_schedule.strip()
    try:
        is_interval = float(schedule) > 0
    except ValueError:
        is_interval = False
    if not is_interval and len(schedule.split()) != 5:
        raise InvalidSettingError(
            env_name("nightly_schedule"),
            settings.nightly_schedule,
            'expected a crontab of 5 fields in UTC ("minute hour day month weekday", e.g. "0 2 * * *") '
            "or a positive number of seconds",
        )


def _check_dedup(settings: WorkerSettings) -> None:
    for name in ("dedup_threshold", "dedup_auto_merge_threshold"):
        if getattr(settings, name) > 1:
            raise InvalidSettingError(env_name(name), getattr(settings, name), "must be at most 1")
    if settings.dedup_auto_merge_threshold < settings.dedup_threshold:
        raise InvalidSettingError(
            env_name("dedup_auto_merge_threshold"),
            settings.dedup_auto_merge_threshold,
            f"must be at least ACE_DEDUP_THRESHOLD ({settings.dedup_threshold})",
        )
    if not isinstance(settings.dedup_across_sections, bool):
        raise InvalidSettingError(
            env_name("dedup_across_sections"), settings.dedup_across_sections, "expected true or false"
        )


def _check_basic_auth(name: str, value: object) -> None:
    if value is None:
        return
    # Flower splits its --basic-auth value on commas: one "user:password" per user.
    pairs = value.split(",") if isinstance(value, str) else []
    if not pairs or not all(_is_credential(pair) for pair in pairs):
        raise InvalidSettingError(
            env_name(name),
            "***",  # never echo a password
            'expected "name:secret" (several separated by commas), each with a name and a secret',
        )


def _is_credential(pair: str) -> bool:
    user, colon, password = pair.partition(":")
    return bool(user.strip() and colon and password)


def _check_sim_failure(rate: float, kind: str) -> None:
    from ..sim.llm import FAILURE_MESSAGES  # the simulator's own list of kinds; imports no Redis or Celery

    if rate > 1:
        raise InvalidSettingError(env_name("sim_failure_rate"), rate, "must be at most 1 (a share of calls)")
    if kind not in FAILURE_MESSAGES:
        raise InvalidSettingError(
            env_name("sim_failure"), kind, f"expected one of {', '.join(FAILURE_MESSAGES)}"
        )


def _check_url(field_name: str, url: object, schemes: tuple[str, ...]) -> None:
    """Refuse a URL of a scheme not in ``schemes``, or a unix-socket URL without its path (None passes)."""
    if url is None:
        return
    variable = env_name(field_name)
    if not isinstance(url, str):
        raise InvalidSettingError(variable, url, "expected a URL string")
    problem = url_problem(url, schemes)
    if problem:
        raise InvalidSettingError(variable, redact_url(url), problem)


def write_partition(skillbook: str, partitions: int) -> int:
    """The write partition of ``skillbook``: a hash of its name every process computes alike.

    (Python's own hash() differs between processes; CRC-32 does not.)
    """
    return zlib.crc32(skillbook.encode("utf-8")) % partitions

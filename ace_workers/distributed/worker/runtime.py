"""What a worker (or a producer) process builds once: clients, stores, pipelines, routes."""

from __future__ import annotations

import asyncio
import inspect
import logging
import threading
from collections import OrderedDict
from collections.abc import Awaitable
from dataclasses import dataclass, field

import redis

from pipeline import Pipeline

from ...core.context import ACEStepContext
from ...dedup import (
    DeduplicationConfig,
    DeduplicationManager,
    Embedder,
    InMemoryEmbeddingCache,
    SimilarityDetector,
    make_embedder,
)
from ...observability.metrics import WorkerMetrics
from ...protocols import LLMClientLike, ReflectorLike
from ...providers.call_gate import GatedClient
from ...redaction.redactor import Redactor, redactor_for
from ...roles import Agent, Reflector, SkillManager
from ..llms import model_client
from ..settings import DEDUP_OFF, SIM_MODEL, WorkerSettings
from ..store.additions_in_flight import RedisAdditionsInFlight
from ..store.backed_skillbook import StoreBackedSkillbook
from ..store.batches import BatchStore
from ..store.embedding_cache import RedisEmbeddingCache
from ..store.keys import SkillbookKeys, validate_skillbook_name
from ..store.pending_operations import PendingOperations
from ..store.schema import connect_checked
from ..store.store import RedisSkillbookStore
from ..tenancy.admission_scheduler import AdmissionState
from ..tenancy.deferred_samples import DeferredSamples
from ..tenancy.errors import UnknownTenantError
from ..tenancy.limiter import Limiter
from ..tenancy.limiter_gate import CompletionSizes, LimiterGate, priced_model
from ..tenancy.spend_meter import SpendMeter
from ..tenancy.tenants import CachedTenants, TenantRegistry
from .errors import RecipeRoutesError
from .failure_logs import FirstFailures
from .ledger_metrics import LedgerCollector
from .payload import ClaimCheck
from .recipes import RecipeInputs, import_object, resolve_recipe
from .routes import Route, recipe_routes, routes_of
from .tenant_metrics import TenantCollector

__all__ = ["Route", "WorkerRuntime", "build_llm", "routes_of"]

logger = logging.getLogger(__name__)


async def _awaited(value: Awaitable[ACEStepContext]) -> ACEStepContext:
    return await value


def build_llm(model: str, settings: WorkerSettings) -> LLMClientLike:
    """The client for ``model``: the settings' factory, else the simulator ("sim") or LiteLLM."""
    if settings.llm_factory:
        factory = import_object(settings.llm_factory)
        return factory(model)  # type: ignore[no-any-return]
    # Not checked here: a worker checks the models of the queues it serves when it starts
    # (check_models), and builds the clients of every role, also those it never calls.
    return model_client(model, settings, check=False)


PipelineAndRoutes = tuple[Pipeline[ACEStepContext], list[Route]]


@dataclass
class _LoadedSkillbook:
    """What a process builds for one skillbook: its Redis-backed skillbook, and a pipeline per recipe."""

    book: StoreBackedSkillbook
    pipelines: dict[str, PipelineAndRoutes] = field(default_factory=dict)


class WorkerRuntime:
    """Per-process cache of Redis clients, skillbook stores and recipe pipelines.

    The skillbooks and their pipelines are kept for the ``ACE_SKILLBOOK_CACHE_SIZE``
    skillbooks used last: a message names its skillbook, so a cache that never
    dropped one would grow with every name any message ever named.
    """

    def __init__(self, settings: WorkerSettings, redis_url: str, *, schema_checked: bool = True) -> None:
        """``redis_url``: the Redis of the store unless ``settings.store_url`` names another.

        Refuses data of another schema than this code's (NewerSchemaError, OlderSchemaError) and
        stamps a new Redis with it: one round trip, here, once per process. Only ``ace-workers
        migrate``, which upgrades such data, passes ``schema_checked=False``.
        """
        self.settings = settings
        # ``where``: the store's Redis as messages name it (no password); ``schema`` None: not
        # checked (migrate reads it itself).
        self.redis, self.where, self.schema = connect_checked(
            settings.store_url or redis_url, settings.queue_prefix, checked=schema_checked
        )
        # The tenants' spend of calls no budget or limit meters, written with the step scripts.
        self.spend_meter = SpendMeter(prefix=settings.queue_prefix)
        self.batches = BatchStore(
            self.redis,
            prefix=settings.queue_prefix,
            ttl_seconds=settings.result_ttl_seconds,
            riders=self.spend_meter,
        )
        self.claims = ClaimCheck(
            self.redis,
            threshold_bytes=settings.claim_check_bytes,
            ttl_seconds=settings.claim_check_ttl_seconds,
            prefix=settings.queue_prefix,
        )
        # Who owns which skillbook: looked at on every step, reloaded when the tenants change.
        self.tenants = CachedTenants(TenantRegistry(self.redis, prefix=settings.queue_prefix))
        # Which samples may be sent (ACE_ADMISSION_WINDOW; worker/admission.py).
        self.admission = AdmissionState(self.redis, prefix=settings.queue_prefix)
        # The fleet's LLM limiter (budgets, ACE_MODEL_LIMITS, 429s): each skillbook's roles pass it
        # on every LLM call (llm_for). A reservation outlives the slowest call; a call waits for its
        # slot at most one LLM timeout.
        self.limiter = Limiter(
            self.redis,
            prefix=settings.queue_prefix,
            model_limits=settings.model_limits_map(),
            hold_seconds=settings.slowest_step_seconds() + 60,
            max_wait_seconds=settings.llm_timeout_seconds,
            riders=self.spend_meter,
        )
        self._pricing = priced_model(SIM_MODEL, settings.sim_cost_per_1k_tokens)
        # What each model's completions were, for the completion part of a call's reservation.
        self._completion_sizes = CompletionSizes()
        self._lock = threading.Lock()
        self._llms: dict[str, LLMClientLike] = {}
        # By skillbook name, least recently used first.
        self._loaded: OrderedDict[str, _LoadedSkillbook] = OrderedDict()
        self._embedders: dict[tuple[str, str], Embedder] = {}
        # Embeddings already read from Redis, by content hash (model and text): they never go
        # stale, and prompt relevance reads every skill's embedding on each budgeted call.
        self.embedding_memo = InMemoryEmbeddingCache()
        # This process's metrics, in a registry of their own; `worker --metrics-port` serves them.
        self.metrics = WorkerMetrics()
        self.metrics.registry.register(LedgerCollector(self.batches))  # read at scrape time only
        self.metrics.registry.register(
            TenantCollector(
                TenantRegistry(self.redis, prefix=settings.queue_prefix),
                DeferredSamples(self.redis, prefix=settings.queue_prefix),
                self.limiter,
            )
        )
        self._published_shapes: set[str] = set()
        # A step that fails for good logs one line; its traceback once per batch and error kind.
        self.first_failures = FirstFailures()

    def note_shape_published(self, digest: str) -> bool:
        """True the first time this process sends a chain of recipe shape ``digest`` (see fleet.py)."""
        with self._lock:
            if digest in self._published_shapes:
                return False
            self._published_shapes.add(digest)
            return True

    def close(self) -> None:
        """Write the spend no step carried yet, and close this process's Redis connections."""
        try:
            self.spend_meter.flush(self.redis)
        except redis.RedisError as error:  # closing goes on: a stopping worker's spend is lost, not its exit
            logger.warning("the tenants' last spend was not written: %s", error)
        self.redis.close()

    def redactor(self, tenant: str) -> Redactor:
        """What redacts ``tenant``'s traces: its ``--redact`` if it set one, else ACE_REDACT.

        Read from the cached tenants, so a change reaches this process within two seconds.
        """
        try:
            spec = self.tenants.get(tenant).redact
        except UnknownTenantError:  # removed since its message was sent: the fleet's setting
            spec = None
        return redactor_for(self.settings.redact if spec is None else spec)

    def skillbook_redactor(self, skillbook: str) -> Redactor:
        """What redacts text about ``skillbook``: the redactor of the tenant that owns it now."""
        return self.redactor(self.tenants.tenant_of(skillbook))

    def store(self, name: str) -> RedisSkillbookStore:
        """The store of skillbook ``name``."""
        return self.skillbook(name).store

    def skillbook(self, name: str) -> StoreBackedSkillbook:
        """The Redis-backed skillbook ``name`` (one object per process while it stays loaded)."""
        validate_skillbook_name(name)
        with self._lock:
            return self._load(name).book

    def loaded_skillbooks(self) -> list[str]:
        """The names of the skillbooks this process holds, least recently used first."""
        with self._lock:
            return list(self._loaded)

    def _load(self, name: str) -> _LoadedSkillbook:
        """``name``'s entry, made the most recently used; built, and the oldest dropped, if absent.

        Called with the lock held.
        """
        loaded = self._loaded.get(name)
        if loaded is not None:
            self._loaded.move_to_end(name)
            return loaded
        store = RedisSkillbookStore(
            self.redis,
            name,
            prefix=self.settings.queue_prefix,
            changelog_maxlen=self.settings.changelog_maxlen,
            max_skills=self.settings.max_skillbook_skills,
            observer=self.metrics,
            provenance_keep=self.settings.provenance_keep,
            retention=self.settings.retention_policy(),
        )
        loaded = self._loaded[name] = _LoadedSkillbook(StoreBackedSkillbook(store))
        while len(self._loaded) > self.settings.skillbook_cache_size:
            self._loaded.popitem(last=False)
        return loaded

    def llm(self, model: str) -> LLMClientLike:
        """One client per model string per process."""
        with self._lock:
            if model not in self._llms:
                self._llms[model] = build_llm(model, self.settings)
            return self._llms[model]

    def llm_for(self, model: str, skillbook: str) -> LLMClientLike:
        """A client for ``model`` whose every call passes the fleet's limiter as ``skillbook``'s tenant.

        LiteLLM models get a client of their own with the gate on each attempt (retries,
        fallbacks, re-asks); the simulator and ACE_LLM_FACTORY clients are the process's one
        client per model behind a gate, passed once per call.
        """
        gate = LimiterGate(
            self.limiter,
            self.tenants,
            skillbook,
            pricing=self._pricing,
            sizes=self._completion_sizes,
            meter=self.spend_meter,
        )
        if self.settings.llm_factory or model == SIM_MODEL:
            return GatedClient(self.llm(model), gate, model)
        return model_client(model, self.settings, check=False, gate=gate)

    def pipeline(self, recipe: str, skillbook: str) -> PipelineAndRoutes:
        """The validated pipeline of ``recipe`` writing to ``skillbook``, and its routes.

        Raises:
            UnknownRecipeError: ``recipe`` is neither built in nor in this process's ACE_RECIPES.
            InvalidSkillbookNameError: ``skillbook`` cannot name a skillbook.
        """
        with self._lock:
            loaded = self._loaded.get(skillbook)
            cached = loaded.pipelines.get(recipe) if loaded is not None else None
            if cached is not None:
                self._loaded.move_to_end(skillbook)
                return cached
        settings = self.settings
        # First, before anything is built: a name from a message imports only what is configured.
        make_steps = resolve_recipe(recipe, settings.recipe_paths())
        book = self.skillbook(skillbook)
        deduplicator = self.deduplicator(skillbook) if settings.dedup_provider != DEDUP_OFF else None
        # With embeddings at hand, a skillbook over the budget is cut by embedding
        # similarity to the task; without, by shared words.
        budget = settings.prompt_budget()
        relevance = deduplicator.relevance() if deduplicator is not None else None
        inputs = RecipeInputs(
            agent=Agent(
                self.llm_for(settings.agent_model, skillbook), prompt_budget=budget, relevance=relevance
            ),
            reflector=self.reflector(skillbook),
            skill_manager=SkillManager(
                self.llm_for(settings.skill_manager_model, skillbook),
                prompt_budget=budget,
                relevance=relevance,
                lookup=settings.skill_lookup_config(),
                # Read at each decision: a proposal stored by another worker a moment ago counts.
                pending=PendingOperations(self.redis, book.store.keys),
                # Learn slots deciding side by side see each other's ADDs before they are written.
                in_flight=RedisAdditionsInFlight(
                    self.redis,
                    book.store.keys,
                    redact=lambda text: self.skillbook_redactor(skillbook).text(text),
                ),
            ),
            skillbook=book,
            checkpoint_interval=settings.checkpoint_interval,
            deduplicator=deduplicator,
            dedup_interval=settings.dedup_interval,
        )
        built: Pipeline[ACEStepContext] = Pipeline(make_steps(inputs))
        routes = self.routes(recipe)
        if [type(step).__name__ for step in built.steps] != [route.name for route in routes]:
            # A recipe whose steps depend on its roles could not be routed without building them.
            raise RecipeRoutesError(recipe, [route.name for route in routes], built.steps)
        entry = (built, routes)
        with self._lock:
            loaded = self._load(skillbook)
            if loaded.book is not book:  # dropped and loaded again meanwhile: the next call builds anew
                return entry
            return loaded.pipelines.setdefault(recipe, entry)

    def routes(self, recipe: str) -> list[Route]:
        """Where each step of ``recipe`` runs (from its step classes: nothing is built).

        Raises:
            UnknownRecipeError: ``recipe`` is neither built in nor in this process's ACE_RECIPES.
        """
        return recipe_routes(recipe, self.settings)

    def check_reflector(self) -> None:
        """Build a Recursive Reflector once, so one that cannot run here stops a worker at start.

        The single-pass reflector needs nothing of the machine: it is not built here (its
        model's client may be costly to load, and a worker builds it when it first reflects).

        Raises:
            SandboxUnavailableError: with ACE_REFLECTOR=rr where the sandbox's OS boundary
                cannot be set up (and ACE_RR_UNSAFE_SANDBOX is not set).
        """
        if self.settings.reflector == "rr":
            self.reflector()

    def reflector(self, skillbook: str | None = None) -> ReflectorLike:
        """The settings' reflector: the single-pass one, or the Recursive Reflector ("rr").

        With ``skillbook``, its calls pass the fleet's limiter as that skillbook's tenant.
        """
        settings = self.settings
        model = settings.reflector_model
        llm = self.llm(model) if skillbook is None else self.llm_for(model, skillbook)
        if settings.reflector != "rr":
            return Reflector(llm)
        from ...rr import Isolation, RRConfig, RRStep, SandboxLimits

        limits = SandboxLimits(timeout_s=settings.rr_timeout_seconds, memory_mb=settings.rr_memory_mb)
        isolation = Isolation.OS_OR_GUARDS if settings.rr_unsafe_sandbox else Isolation.OS
        config = RRConfig(max_iterations=settings.rr_max_iterations, limits=limits, isolation=isolation)
        return RRStep(llm, config=config)

    def deduplicator(self, skillbook: str, provider: str | None = None) -> DeduplicationManager:
        """A deduplication manager for ``skillbook``: the settings' embeddings, cached in its Redis.

        Decisions come from the SkillManager's model. The embedding model is
        loaded once per process; a missing extra fails here, before any sample.
        """
        settings = self.settings
        provider = provider or settings.dedup_provider
        with self._lock:
            embedder = self._embedders.get((provider, settings.dedup_model))
        if embedder is None:
            embedder = make_embedder(provider, settings.dedup_model)
            with self._lock:
                embedder = self._embedders.setdefault((provider, settings.dedup_model), embedder)
        config = DeduplicationConfig(
            embedding_provider=embedder,
            embedding_model=settings.dedup_model,
            similarity_threshold=settings.dedup_threshold,
            within_section_only=not settings.dedup_across_sections,
            auto_merge_threshold=settings.dedup_auto_merge_threshold,
            prune=settings.prune_rule(),
        )
        cache = RedisEmbeddingCache(
            self.redis, SkillbookKeys(skillbook, settings.queue_prefix), memo=self.embedding_memo
        )
        detector = SimilarityDetector(embedder, model_name=settings.dedup_model, cache=cache)
        llm = self.llm_for(settings.skill_manager_model, skillbook)
        return DeduplicationManager(config, llm=llm, detector=detector)

    def queue(self, role: str, skillbook: str | None = None) -> str:
        """The Celery queue of a queue role; for "write", ``skillbook``'s write partition."""
        if role == "write" and self.settings.write_partitions > 1:
            if skillbook is None:
                raise ValueError("with ACE_WRITE_PARTITIONS > 1 the write queue depends on the skillbook")
            return self.settings.write_queue(skillbook)
        return self.settings.queue_names()[role]

    def call_step(self, recipe: str, skillbook: str, index: int, ctx: ACEStepContext) -> ACEStepContext:
        """Run step ``index`` on ``ctx`` directly.

        Not through the engine's exclusive-step lock: on workers the queue's
        concurrency is the limit (SkillManager calls run in parallel on snapshots and the
        store rebases their writes; writers run on the one-slot write queue).
        """
        pipeline, _ = self.pipeline(recipe, skillbook)
        step = pipeline.steps[index]
        out = step(ctx)
        if inspect.isawaitable(out):
            out = asyncio.run(_awaited(out))
        if not isinstance(out, ACEStepContext):
            raise TypeError(
                f"step {type(step).__name__} returned {type(out).__name__}, not an ACEStepContext"
            )
        return out

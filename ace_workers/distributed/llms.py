"""The client a model name stands for, and the check that the models of the settings can be called.

One mapping for every place a model is named: the workers' ``ACE_*_MODEL`` settings,
the MCP server's local back end and the runners' ``from_model``. "sim" is the
simulated LLM (:mod:`ace_workers.sim`, with the settings' ``ACE_SIM_*`` options); any
other name is a litellm model. ``ACE_LLM_FACTORY``, when set, comes first on workers
(:func:`~ace_workers.distributed.worker.runtime.build_llm`) and is not checked here:
its clients are the application's own.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..protocols import LLMClientLike
from ..providers import LiteLLMClient, check_model, wrap_with_instructor
from ..providers.call_gate import CallGate
from .settings import DEDUP_OFF, QUEUE_ROLES, SIM_MODEL, WorkerSettings

__all__ = ["ROLE_MODELS", "check_model_setting", "check_models", "model_client", "model_fields"]

# The model settings each queue role's steps call: the Agent executes; Reflect and Update learn;
# a writer calls the SkillManager's model only to consolidate duplicates.
ROLE_MODELS: dict[str, tuple[str, ...]] = {
    "execute": ("agent_model",),
    "learn": ("reflector_model", "skill_manager_model"),
    "write": ("skill_manager_model",),
}


def model_client(
    model: str,
    settings: WorkerSettings | None = None,
    *,
    max_tokens: int | None = None,
    temperature: float = 0.0,
    check: bool = True,
    gate: CallGate | None = None,
) -> LLMClientLike:
    """The simulated LLM for "sim", else a LiteLLM client with validated structured output.

    ``settings`` (default: the defaults, not the environment) give the simulator's options and
    the client's timeout and re-asks. ``check`` first makes sure litellm can call ``model``.
    ``gate`` (LiteLLM models only) is passed by every attempt: the fleet's LLM limiter.

    Raises:
        ModelUnavailableError: ``check`` and litellm knows no provider for ``model``, or its
            credentials are not set.
    """
    settings = settings if settings is not None else WorkerSettings()
    if model == SIM_MODEL:
        # Imported here: the simulator is test and demo code, loaded only when asked for.
        from ..sim import SimulatedLLM

        return SimulatedLLM(
            latency=settings.sim_latency_seconds,
            trust_threshold=settings.sim_trust_threshold,
            failure_rate=settings.sim_failure_rate,
            failure=settings.sim_failure,
            cost_per_1k_tokens=settings.sim_cost_per_1k_tokens,
            paraphrase=settings.sim_paraphrase,
        )
    if check:
        check_model(model)
    client = LiteLLMClient(
        model, timeout=settings.llm_timeout_seconds, max_tokens=max_tokens, temperature=temperature, gate=gate
    )
    return wrap_with_instructor(client, max_retries=settings.llm_max_retries)


def check_models(settings: WorkerSettings, roles: Iterable[str] = QUEUE_ROLES) -> None:
    """Make sure litellm can call every model the queue ``roles`` use ("write.K" is a writer too).

    Raises:
        ModelUnavailableError: for the first model that cannot be called.
    """
    for model in dict.fromkeys(getattr(settings, field) for field in model_fields(roles, settings)):
        check_model_setting(model, settings)


def model_fields(roles: Iterable[str], settings: WorkerSettings) -> list[str]:
    """The model settings (WorkerSettings fields) the steps of the queue ``roles`` call ("write.K" too).

    A writer calls a model only to consolidate duplicates: with deduplication off, none.
    """
    kinds = {role.split(".")[0] for role in roles}
    if settings.dedup_provider == DEDUP_OFF:
        kinds.discard("write")
    return list(dict.fromkeys(field for kind in QUEUE_ROLES if kind in kinds for field in ROLE_MODELS[kind]))


def check_model_setting(model: str, settings: WorkerSettings) -> None:
    """Make sure litellm can call ``model``, named in ``settings``; "sim" and ACE_LLM_FACTORY pass.

    Raises:
        ModelUnavailableError: litellm knows no provider for ``model``, or its credentials are unset.
    """
    if model != SIM_MODEL and not settings.llm_factory:
        check_model(model)

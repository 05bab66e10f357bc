"""Whether a litellm model can be called from here, asked of litellm before any work starts.

A model litellm has no provider for, or whose provider's credentials are not set,
fails every call; found at the first call, that is one failed sample after another
(each retried), long after the command started. litellm can tell up front:
:func:`litellm.get_llm_provider` refuses an unknown model, and
:func:`litellm.validate_environment` lists the variables a provider needs and lacks.
"""

from __future__ import annotations

from ..errors import ModelUnavailableError
from ._lazy_imports import import_litellm

__all__ = ["check_model"]

PROVIDERS_PAGE = "https://docs.litellm.ai/docs/providers"
# Providers litellm lists a variable as missing for although it works without it: Ollama's
# OLLAMA_API_BASE defaults to http://localhost:11434.
OPTIONAL_ENVIRONMENT = {"ollama": {"OLLAMA_API_BASE"}, "ollama_chat": {"OLLAMA_API_BASE"}}


def check_model(model: str, *, api_key: str | None = None, api_base: str | None = None) -> None:
    """Raise ModelUnavailableError unless litellm knows ``model``'s provider and its credentials are set.

    ``api_key`` and ``api_base`` count as set when given (a client that passes its own).
    """
    litellm = import_litellm()
    try:
        _, provider, _, _ = litellm.get_llm_provider(model, api_base=api_base, api_key=api_key)
    except Exception:  # litellm raises its BadRequestError, or a ValueError for a malformed name
        raise ModelUnavailableError(
            model,
            f"is not a model litellm knows (name its provider, as in 'openai/gpt-4o-mini'; "
            f"providers: {PROVIDERS_PAGE})",
        ) from None
    found = litellm.validate_environment(model, api_key=api_key, api_base=api_base)
    missing = tuple(
        name for name in found["missing_keys"] if name not in OPTIONAL_ENVIRONMENT.get(provider, set())
    )
    if missing:
        raise ModelUnavailableError(model, f"needs {_listed(missing)}", missing)


def _listed(names: tuple[str, ...]) -> str:
    """``A``, ``A and B``, ``A, B and C``."""
    return " and ".join([", ".join(names[:-1]), names[-1]] if len(names) > 1 else names)

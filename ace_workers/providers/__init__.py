"""LLM providers: free-text and structured completions from any model litellm supports.

Importing this package imports neither litellm nor instructor; they load on the
first call, so processes that never call a model do not pay for them.
"""

from .instructor_client import InstructorClient, wrap_with_instructor
from .langchain_litellm import LangChainLiteLLMClient
from .litellm_client import LiteLLMClient, LiteLLMConfig
from .model_check import check_model
from .response import LLMResponse

__all__ = [
    # free text
    "LLMResponse",
    "LiteLLMClient",
    "LiteLLMConfig",
    # before any work: can the model be called from here?
    "check_model",
    # structured output
    "InstructorClient",
    "wrap_with_instructor",
    # through LangChain's ChatLiteLLM (extra: langchain)
    "LangChainLiteLLMClient",
]

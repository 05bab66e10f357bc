"""LLM providers: free-text and structured completions from any model litellm supports.

Importing this package imports neither litellm nor instructor; they load on the
first call, so processes that never call a model do not pay for them.
"""

from .instructor_client import InstructorClient, wrap_with_instructor
from .langchain_litellm import LangChainLiteLLMClient
from .litellm_client import LiteLLMClient, LiteLLMConfig
from .response import LLMResponse

__all__ = [
    # free text
    "LLMResponse",
    "LiteLLMClient",
    "LiteLLMConfig",
    # structured output
    "InstructorClient",
    "wrap_with_instructor",
    # through LangChain's ChatLiteLLM (extra: langchain)
    "LangChainLiteLLMClient",
]

"""LangChain runs as traces; imports no LangChain module (a LangChainResult holds JSON values)."""

from .result import LangChainResult, ResultType
from .to_trace import LangChainToTrace, langchain_result_to_trace

__all__ = ["LangChainResult", "LangChainToTrace", "ResultType", "langchain_result_to_trace"]

"""LangChain offline: a scripted chat model and a tool-calling agent built from real langchain_core parts."""

from __future__ import annotations

import functools
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, cast

# langchain_core is imported on first use, not with this module: every xdist worker collects every
# test module, and loading the SDK there would cost each worker its import time.
if TYPE_CHECKING:
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage, BaseMessage
    from langchain_core.outputs import ChatResult
    from langchain_core.runnables import Runnable
    from langchain_core.tools import BaseTool

    class ScriptedChatModel(GenericFakeChatModel):
        """The class scripted_chat_model() builds, as the type checker sees it."""

        seen: list[list[BaseMessage]]

        def last_prompt(self) -> str: ...


@functools.cache
def scripted_chat_model() -> type[GenericFakeChatModel]:
    """The ScriptedChatModel class (a subclass of a langchain_core class, so built on first use)."""
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import BaseMessage  # noqa: F401  (pydantic resolves `seen` from here)
    from pydantic import Field

    class ScriptedChatModel(GenericFakeChatModel):
        """LangChain's own fake chat model, replying from a script, keeping every conversation it was sent."""

        seen: list[list[BaseMessage]] = Field(default_factory=list)

        def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
            self.seen.append(list(messages))
            return super()._generate(messages, *args, **kwargs)

        def last_prompt(self) -> str:
            return "\n".join(str(message.content) for message in self.seen[-1])

    return ScriptedChatModel


def scripted(*replies: AIMessage | str) -> ScriptedChatModel:
    return cast("ScriptedChatModel", scripted_chat_model()(messages=iter(replies)))


def replies(*replies: AIMessage | str, times: int = 20) -> Iterator[AIMessage | str]:
    """The same replies over and over (for a model asked once per run, many runs)."""
    for _ in range(times):
        yield from replies


def call(name: str, **args: Any) -> AIMessage:
    """A model reply that calls one tool."""
    from langchain_core.messages import AIMessage

    return AIMessage(content="", tool_calls=[{"name": name, "args": args, "id": f"call-{name}"}])


def tool_agent(model: ScriptedChatModel, tools: list[BaseTool]) -> Runnable[Any, Any]:
    """A minimal tool-calling agent (the loop LangGraph's prebuilt agent runs): model, tools, model..."""
    from langchain_core.messages import HumanMessage
    from langchain_core.runnables import RunnableLambda

    by_name = {t.name: t for t in tools}

    def run(inputs: dict[str, Any]) -> dict[str, Any]:
        messages: list[BaseMessage] = [HumanMessage(inputs["input"])]
        for _ in range(5):
            reply = model.invoke(messages)
            messages.append(reply)
            if not reply.tool_calls:
                break
            for tool_call in reply.tool_calls:
                messages.append(by_name[tool_call["name"]].invoke(tool_call))
        return {"messages": messages}

    return RunnableLambda(run, name="tool_agent")


@functools.cache
def _tools() -> dict[str, BaseTool]:
    """The tools, built once on first use: a tool's name and description are its function's."""
    from langchain_core.tools import tool

    def zorb_table(n: int) -> str:
        """Look up the zorb of n in the reference table."""
        return f"the table has no entry for {n}"

    def broken_lookup(n: int) -> str:
        """A lookup whose backend is down."""
        raise ConnectionError(f"lookup backend unreachable for {n}")

    def huge_dump(n: int) -> str:
        """Dump everything known about n."""
        return "row " * 50_000

    return {function.__name__: tool(function) for function in (zorb_table, broken_lookup, huge_dump)}


def zorb_table() -> BaseTool:
    return _tools()["zorb_table"]


def broken_lookup() -> BaseTool:
    return _tools()["broken_lookup"]


def huge_dump() -> BaseTool:
    return _tools()["huge_dump"]

"""LangChain offline: a scripted chat model and a tool-calling agent built from real langchain_core parts."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.outputs import ChatResult
from langchain_core.runnables import Runnable, RunnableLambda
from langchain_core.tools import BaseTool, tool
from pydantic import Field


class ScriptedChatModel(GenericFakeChatModel):
    """LangChain's own fake chat model, replying from a script, keeping every conversation it was sent."""

    seen: list[list[BaseMessage]] = Field(default_factory=list)

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        self.seen.append(list(messages))
        return super()._generate(messages, *args, **kwargs)

    def last_prompt(self) -> str:
        return "\n".join(str(message.content) for message in self.seen[-1])


def scripted(*replies: AIMessage | str) -> ScriptedChatModel:
    return ScriptedChatModel(messages=iter(replies), seen=[])


def replies(*replies: AIMessage | str, times: int = 20) -> Iterator[AIMessage | str]:
    """The same replies over and over (for a model asked once per run, many runs)."""
    for _ in range(times):
        yield from replies


def call(name: str, **args: Any) -> AIMessage:
    """A model reply that calls one tool."""
    return AIMessage(content="", tool_calls=[{"name": name, "args": args, "id": f"call-{name}"}])


def tool_agent(model: ScriptedChatModel, tools: list[BaseTool]) -> Runnable[Any, Any]:
    """A minimal tool-calling agent (the loop LangGraph's prebuilt agent runs): model, tools, model..."""
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


@tool
def zorb_table(n: int) -> str:
    """Look up the zorb of n in the reference table."""
    return f"the table has no entry for {n}"


@tool
def broken_lookup(n: int) -> str:
    """A lookup whose backend is down."""
    raise ConnectionError(f"lookup backend unreachable for {n}")


@tool
def huge_dump(n: int) -> str:
    """Dump everything known about n."""
    return "row " * 50_000

"""Planted secrets and personal data, a simulated LLM that records every prompt, and a whole-Redis reader.

The redaction tests plant the values below in traces, learn from them on real workers, and look
for them in every prompt, every key of Redis, the logs and the skills.
"""

from __future__ import annotations

import threading
from typing import Any, ClassVar, TypeVar

import redis
from pydantic import BaseModel

from ace_workers.core.outputs import AgentOutput, SkillManagerOutput
from ace_workers.core.updates import UpdateOperation
from ace_workers.errors import LLMError
from ace_workers.sim import SimulatedLLM
from ace_workers.sim.llm import SimulatedCompletion
from ace_workers.sim.parsing import parse_sections, section_value
from tests.support.backups import raw_content

ModelT = TypeVar("ModelT", bound=BaseModel)

# An API key of the sk- kind, an AWS access key id, a GitHub token.
API_KEY = "sk-live-4eC39HqLyjWDarjtT1zdp7dc9aQ2"
AWS_KEY = "AKIAZ7QXRV4MPL2NW3JD"
GITHUB_TOKEN = "ghp_R2d2C3poLuke5kywalker0bi1Wan2Kenobi7"
EMAIL = "jane.roe@example.org"
OTHER_EMAIL = "sam.poe@example.net"
CARD = "4539 1488 0343 6467"  # passes Luhn
PLANTED = (API_KEY, AWS_KEY, GITHUB_TOKEN, EMAIL, OTHER_EMAIL, CARD)
# What each planted value may also be written as, so a search finds it however it was stored.
SEARCHED = (*PLANTED, CARD.replace(" ", ""), "jane.roe@", "sam.poe@")
# The recording LLM's SkillManager adds a skill quoting this, as an LLM might that had seen it
# elsewhere: the operation must be redacted before it is applied.
LEAKED_KEY = "AKIAQ3EGUKQ5LEAKED77"

FACTORY = "tests.support.redaction:recording_llm"
# The evaluation tests' agent (EchoingLLM): what a question asks it to answer follows this.
ANSWER_WITH = "Answer with: "
# What it answers a question that does not say: an address it knew from elsewhere.
KNOWN_ANSWER = OTHER_EMAIL
# A question holding this fails its call, with an error quoting the question and LEAKED_KEY.
FAILS = "(the provider fails this one)"
ECHOING_FACTORY = "tests.support.redaction:echoing_llm"


def planted_traces(count: int) -> list[dict[str, Any]]:
    """``count`` failure traces, each holding every planted value (the e-mail twice)."""
    return [
        {
            "question": f"Why was the refund {number} for {EMAIL} refused?",
            "answer": f"I charged card {CARD} and wrote to {EMAIL} and to {OTHER_EMAIL}.",
            "feedback": "Incorrect.",
            "ground_truth": "Refunds go back to the original card.",
            "steps": [
                {"tool": "billing", "output": f"auth failed for key {API_KEY}"},
                {"tool": "aws", "output": f"credentials {AWS_KEY} and token {GITHUB_TOKEN}"},
            ],
        }
        for number in range(count)
    ]


def found_in(text: str) -> list[str]:
    """The planted values (or their leaked key) that ``text`` holds."""
    return [value for value in (*SEARCHED, LEAKED_KEY) if value in text]


class RecordingLLM(SimulatedLLM):
    """The simulated LLM, recording every prompt; its SkillManager also adds a skill quoting LEAKED_KEY."""

    # Shared by every instance: the in-process workers build their own clients.
    prompts: ClassVar[list[str]] = []
    _lock: ClassVar[threading.Lock] = threading.Lock()

    def complete(self, prompt: str, **kwargs: Any) -> SimulatedCompletion:
        self._record(prompt)
        return super().complete(prompt, **kwargs)

    def complete_structured(self, prompt: str, response_model: type[ModelT], **kwargs: Any) -> ModelT:
        self._record(prompt)
        reply = super().complete_structured(prompt, response_model, **kwargs)
        if isinstance(reply, SkillManagerOutput):
            leak = UpdateOperation(type="ADD", section="billing", content=f"Rotate key {LEAKED_KEY} first.")
            update = reply.update.model_copy(update={"operations": [*reply.update.operations, leak]})
            return reply.model_copy(update={"update": update})  # type: ignore[return-value]
        return reply

    def _record(self, prompt: str) -> None:
        with self._lock:
            RecordingLLM.prompts.append(prompt)


def recording_llm(model: str) -> SimulatedLLM:
    """ACE_LLM_FACTORY: every model is the recording simulator."""
    return RecordingLLM(trust_threshold=0)


class EchoingLLM(RecordingLLM):
    """The recording LLM whose Agent answers what the question says after ANSWER_WITH, else KNOWN_ANSWER.

    A question holding FAILS fails, as a provider's error that quotes what it was sent might.
    """

    def complete_structured(self, prompt: str, response_model: type[ModelT], **kwargs: Any) -> ModelT:
        if response_model is not AgentOutput:
            return super().complete_structured(prompt, response_model, **kwargs)
        self._record(prompt)
        question = section_value(parse_sections(prompt), "Question")
        if FAILS in question:
            raise LLMError(f"provider refused {question!r} for account {LEAKED_KEY}")
        _, asked, answer = question.partition(ANSWER_WITH)
        final_answer = answer.strip() if asked else KNOWN_ANSWER
        return response_model.model_validate({"reasoning": "As asked.", "final_answer": final_answer})


def echoing_llm(model: str) -> SimulatedLLM:
    """ACE_LLM_FACTORY: every model is the echoing simulator."""
    return EchoingLLM()


def redis_text(client: redis.Redis) -> str:
    """Everything the Redis database holds, every key of every type (names, fields, stream entries)."""
    parts = []
    for raw in client.scan_iter(count=1000):
        key = raw.decode("utf-8", "replace")
        key_type = client.type(raw).decode()
        parts.append(key)
        parts.append(repr(raw_content(client, key, key_type)))
    return "\n".join(parts)

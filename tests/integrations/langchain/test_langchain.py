"""LangChain: real langchain_core runnables driven by LangChain's fake chat model, learned from by ACE."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from ace_workers import (
    LangChain,
    LangChainExecuteStep,
    LangChainLiteLLMClient,
    LangChainResult,
    LangChainToTrace,
)
from ace_workers.core import ACEStepContext, Skillbook
from ace_workers.core.context import SkillbookView
from ace_workers.errors import MissingExtraError, RetriesExhausted
from ace_workers.roles import Reflector, SkillManager
from ace_workers.sim import SimulatedLLM, make_tasks
from tests.support.langchain_agents import (
    broken_lookup,
    call,
    huge_dump,
    replies,
    scripted,
    tool_agent,
    zorb_table,
)

STRATEGY = "Check the units before converting a length"


def skillbook_with_strategy() -> Skillbook:
    skillbook = Skillbook()
    skillbook.add_skill("units", STRATEGY)
    return skillbook


def execute(
    step: LangChainExecuteStep, sample: object, skillbook: Skillbook | None = None
) -> LangChainResult:
    ctx = ACEStepContext(sample=sample, skillbook=SkillbookView(skillbook or Skillbook()))
    result = step(ctx).trace
    assert isinstance(result, LangChainResult)
    return result


def to_trace(result: LangChainResult) -> dict[str, object]:
    trace = LangChainToTrace()(ACEStepContext(trace=result)).trace
    assert isinstance(trace, dict)
    return trace


# -- the execute step ------------------------------------------------------------------------


def test_a_chain_gets_the_skillbook_in_its_prompt_variable_and_its_answer_is_recorded() -> None:
    from langchain_core.prompts import ChatPromptTemplate

    model = scripted("5 km is 5000 m")
    chain = ChatPromptTemplate.from_template("Answer briefly: {input}") | model
    result = execute(
        LangChainExecuteStep(chain), {"input": "How many metres in 5 km?"}, skillbook_with_strategy()
    )
    prompt = model.last_prompt()
    assert STRATEGY in prompt
    assert prompt.index(STRATEGY) < prompt.index("How many metres in 5 km?")
    assert (result.task, result.output, result.result_type, result.success) == (
        "How many metres in 5 km?",
        "5 km is 5000 m",
        "simple",
        True,
    )
    assert [event["type"] for event in result.events] == ["llm"]


def test_an_empty_skillbook_leaves_the_input_as_it_was() -> None:
    model = scripted("ok")
    execute(LangChainExecuteStep(model), "plain question")
    assert [m.content for m in model.seen[-1]] == ["plain question"]


def test_a_message_list_gets_the_skillbook_merged_into_its_system_message() -> None:
    from langchain_core.messages import HumanMessage, SystemMessage

    model = scripted("ok")
    messages = [SystemMessage("You are terse."), HumanMessage("Convert 3 miles")]
    execute(LangChainExecuteStep(model), messages, skillbook_with_strategy())
    sent = model.seen[-1]
    assert [m.type for m in sent] == ["system", "human"]
    assert STRATEGY in str(sent[0].content)
    assert str(sent[0].content).endswith("You are terse.")


def test_a_langgraph_state_gets_a_system_message_and_its_messages_are_the_result() -> None:
    model = scripted(call("zorb_table", n=42), "I could not find it")
    agent = tool_agent(model, [zorb_table()])
    result = execute(
        LangChainExecuteStep(agent), {"input": "What is the zorb of 42?"}, skillbook_with_strategy()
    )
    assert STRATEGY in model.last_prompt()
    assert result.result_type == "langgraph"
    assert result.output == "I could not find it"
    assert [m["role"] for m in result.messages] == ["human", "ai", "tool", "ai"]
    assert [e["type"] for e in result.events] == ["llm", "tool_call", "tool_result", "llm"]


def test_a_dict_input_without_the_task_key_is_refused_naming_its_keys() -> None:
    step = LangChainExecuteStep(scripted("x"))
    with pytest.raises(TypeError, match=r"no string 'input'.*\['query'\].*input_key="):
        execute(step, {"query": "x"}, skillbook_with_strategy())
    assert execute(LangChainExecuteStep(scripted("y"), input_key="query"), {"query": "x"}).task == "x"


def test_a_dict_input_without_the_task_key_is_refused_while_the_skillbook_is_still_empty() -> None:
    # With nothing to put in the input the step used to pass it on as it was: it ran until the
    # first skill was learned, then refused every input. It refuses the first now.
    model = scripted("x")
    with pytest.raises(TypeError, match=r"the input dict has no string 'input' .*\['query'\].*input_key="):
        execute(LangChainExecuteStep(model), {"query": "x"})
    assert model.seen == []  # refused before the runnable ran


def test_the_runner_fails_the_first_input_without_the_task_key_not_the_ones_after_learning() -> None:
    llm = SimulatedLLM()
    runner = LangChain.from_roles(
        runnable=scripted(*replies("no idea")), reflector=Reflector(llm), skill_manager=SkillManager(llm)
    )
    results = runner.run([{"query": task.question} for task in make_tasks(2, topics=1)])
    assert [type(r.error) for r in results] == [TypeError, TypeError]
    assert "no string 'input'" in str(results[0].error)
    assert runner.skillbook.skills() == []


def test_a_run_that_raised_is_a_failed_result_with_the_tool_error_not_an_exception() -> None:
    agent = tool_agent(scripted(call("broken_lookup", n=7), "unused"), [broken_lookup()])
    result = execute(LangChainExecuteStep(agent), {"input": "What is the zorb of 7?"})
    assert not result.success
    assert result.result_type == "error"
    assert result.error == "ConnectionError: lookup backend unreachable for 7"
    trace = to_trace(result)
    assert trace["success"] is False
    assert trace["errors"] == ["broken_lookup failed: ConnectionError: lookup backend unreachable for 7"]
    assert str(trace["feedback"]).startswith("The LangChain runnable failed: ConnectionError")


def test_a_failing_output_parser_fails_the_run_but_keeps_the_output() -> None:
    from langchain_core.messages import AIMessage

    def parser(output: object) -> str:
        raise KeyError("answer")

    result = execute(LangChainExecuteStep(scripted("fine"), output_parser=parser), "q")
    assert not result.success
    assert result.error == "output_parser failed: KeyError: 'answer'"
    assert isinstance(result.raw_result, AIMessage)
    assert result.result_type == "simple"


def test_a_value_without_invoke_is_refused_at_construction() -> None:
    with pytest.raises(TypeError, match=r"needs a LangChain Runnable.*got str"):
        LangChainExecuteStep("not a chain")


def test_without_the_extra_the_step_names_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "langchain_core", None)
    with pytest.raises(MissingExtraError, match=r"pip install 'ace-workers\[langchain\]'"):
        LangChainExecuteStep(object())


def test_without_langchain_litellm_the_client_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "langchain_litellm", None)
    with pytest.raises(MissingExtraError, match=r"LangChainLiteLLMClient needs .*'langchain'"):
        LangChainLiteLLMClient("gpt-4o-mini")


# -- the trace -------------------------------------------------------------------------------


def test_the_trace_holds_the_task_the_tool_calls_in_order_and_the_answer() -> None:
    agent = tool_agent(scripted(call("zorb_table", n=42), "no idea"), [zorb_table()])
    trace = to_trace(execute(LangChainExecuteStep(agent), {"input": "What is the zorb of 42?"}))
    assert trace["question"] == "What is the zorb of 42?"
    assert trace["answer"] == "no idea"
    assert trace["tool_calls"] == 1
    reasoning = str(trace["reasoning"])
    assert reasoning.index('tool call zorb_table: {"n": 42}') < reasoning.index(
        "zorb_table result: the table has no entry for 42"
    )
    assert trace["result_type"] == "langgraph"
    assert trace["success"] is True
    assert trace["model"] == "ScriptedChatModel"  # the model each reply came from


def test_a_huge_tool_output_is_cut_with_a_note_and_the_trace_stays_small() -> None:
    agent = tool_agent(scripted(call("huge_dump", n=1), "done"), [huge_dump()])
    trace = to_trace(execute(LangChainExecuteStep(agent), {"input": "Dump 1"}))
    assert "characters cut from this output" in str(trace["reasoning"])
    assert len(json.dumps(trace)) < 20_000  # the tool printed 200,000 characters


def test_unknown_events_are_counted_not_fatal_and_agent_steps_fill_in_for_missing_tool_events() -> None:
    result = LangChainResult(
        task="Find the zorb of 9",
        output="90",
        result_type="agent",
        success=True,
        intermediate_steps=[
            {"tool": "zorb_table", "tool_input": {"n": 9}, "log": "look it up", "output": "no"}
        ],
        events=[{"type": "telepathy", "text": "?"}, {"type": "llm", "text": "90"}],
    )
    trace = to_trace(result)
    assert trace["skipped_events"] == {"event telepathy": 1}
    assert trace["tool_calls"] == 1
    assert "zorb_table result: no" in str(trace["reasoning"])


def test_a_run_with_no_task_text_still_gives_a_trace() -> None:
    trace = to_trace(LangChainResult(task="", output="", result_type="error", success=False, error="boom"))
    assert trace["question"] == "(no task text)"
    assert trace["errors"] == ["boom"]


def test_the_converter_refuses_what_is_not_a_result() -> None:
    with pytest.raises(TypeError, match=r"needs ctx\.trace to be a LangChainResult, got dict"):
        LangChainToTrace()(ACEStepContext(trace={"question": "q"}))


# -- the runner ------------------------------------------------------------------------------


def test_the_runner_learns_the_rule_from_a_wrong_answer_and_uses_it_next_time(tmp_path: Path) -> None:
    from langchain_core.prompts import ChatPromptTemplate

    llm = SimulatedLLM()
    model = scripted(*replies("no idea"))
    chain = ChatPromptTemplate.from_template("{input}") | model
    runner = LangChain.from_model(chain, ace_llm=llm)
    task = make_tasks(1, topics=1)[0].question  # a zorb puzzle; the chain answers "no idea"
    results = runner.run([{"input": task}])
    assert all(r.ok for r in results)
    assert [s.section for s in runner.skillbook.skills()] == ["zorb"]
    runner.save(tmp_path / "chain.json")
    again = LangChain.from_roles(
        runnable=chain,
        reflector=Reflector(llm),
        skill_manager=SkillManager(llm),
        skillbook_path=tmp_path / "chain.json",
    )
    again.run([{"input": task}])
    assert "reverse the digits" in model.last_prompt()


def test_the_runner_can_return_before_learning_ends() -> None:
    llm = SimulatedLLM()
    runner = LangChain.from_roles(
        runnable=scripted(*replies("no idea")), reflector=Reflector(llm), skill_manager=SkillManager(llm)
    )
    results = runner.run([s.question for s in make_tasks(2, topics=1)], wait=False)
    runner.wait_for_background(timeout=30)
    assert len(results) == 2
    assert runner.learning_stats["completed"] == 2


def test_the_runner_refuses_an_option_it_does_not_take() -> None:
    llm = SimulatedLLM()
    with pytest.raises(TypeError, match="does not take 'inptu_key'"):
        LangChain.from_roles(
            runnable=scripted("x"), reflector=Reflector(llm), skill_manager=SkillManager(llm), inptu_key="q"
        )


# -- LangChainLiteLLMClient: the real ChatLiteLLM -> litellm path, offline (mock_response) ----------


def test_the_langchain_litellm_client_answers_through_litellm() -> None:
    client = LangChainLiteLLMClient("gpt-4o-mini", mock_response="Paris")
    response = client.complete("Capital of France?")
    assert (response.text, response.model) == ("Paris", "gpt-4o-mini")
    assert response.usage["total_tokens"] > 0
    assert response.cost is not None
    assert response.cost > 0


def test_the_langchain_litellm_client_gives_validated_structured_output_or_gives_up() -> None:
    from ace_workers.core.outputs import AgentOutput

    reply = json.dumps({"reasoning": "r", "final_answer": "Paris", "skill_ids": []})
    output = LangChainLiteLLMClient("gpt-4o-mini", mock_response=reply).complete_structured("Q?", AgentOutput)
    assert output.final_answer == "Paris"
    assert output.raw["attempts"] == 1
    with pytest.raises(RetriesExhausted) as caught:
        LangChainLiteLLMClient("gpt-4o-mini", mock_response="not json", max_retries=1).complete_structured(
            "Q?", AgentOutput
        )
    assert caught.value.attempts == 2


def test_importing_ace_workers_and_its_langchain_package_imports_no_langchain() -> None:
    check = (
        "import sys\n"
        "import ace_workers, ace_workers.integrations.langchain, ace_workers.runners\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('langchain_core', 'langchain_litellm', 'litellm')))\n"
    )
    done = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout.strip()) == (0, "[]"), done.stderr

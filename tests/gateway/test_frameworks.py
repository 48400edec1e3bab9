"""Real agent frameworks, written as their users write them, played through the model gateway and trained
on: a plain `openai` loop with a tool, smolagents' CodeAgent (synchronous; it sends `stop`), the OpenAI
Agents SDK with a function tool (chat completions, tracing off) and a LangGraph graph (a model node bound to a
tool, a `ToolNode`, `tools_condition`) over langchain-openai's `ChatOpenAI`. Each plays episodes through
`HarnessEpisodes` (a scripted policy answering in the framework's format: the episode mechanics), then
trains one real GRPO step with the trainer's tiny model behind the gateway (slow). The frameworks come
from the `harness` extra."""

from __future__ import annotations

import asyncio
import functools
import json
import re

import pytest
from gateway_helpers import one_grpo_step

from workbench.gateway import HarnessEpisodes
from workbench.policies import ScriptedPolicy
from workbench.trajectory import Task, Trajectory

smolagents = pytest.importorskip("smolagents", reason="the `harness` extra: pip install -e '.[harness]'")
agents = pytest.importorskip("agents", reason="the `harness` extra: pip install -e '.[harness]'")
langgraph = pytest.importorskip("langgraph", reason="the `harness` extra: pip install -e '.[harness]'")

MAX_TOKENS = 160  # the scripts fit; the tiny model of the GRPO step samples this much at most
TASKS = [Task(f"t{i}", f"What is {i} + 3?", golden_answers=[str(i + 3)]) for i in range(3)]
ADD_TOOL = {
    "type": "function",
    "function": {
        "name": "add",
        "description": "Add two integers.",
        "parameters": {
            "type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
            "required": ["a", "b"],
        },
    },
}


def add(a: int, b: int) -> int:
    return a + b


def operands(context: str) -> tuple[int, int]:
    a, b = re.findall(r"What is (\d+) \+ (\d+)\?", context)[-1]
    return int(a), int(b)


def tool_call_script(context: str, _turn: int) -> str:
    """Calls `add` in the gateway's text protocol, then answers with the tool's result."""
    results = re.findall(r"<tool_response>\n(.*?)\n</tool_response>", context, re.S)
    if results:
        return results[-1].strip()
    a, b = operands(context)
    return f'<tool_call>\n{{"name": "add", "arguments": {{"a": {a}, "b": {b}}}}}\n</tool_call>'


def code_script(context: str, _turn: int) -> str:
    """What a CodeAgent's model writes: a thought and a code block (cut at `</code>`, its stop), then the answer."""
    if "Observation:\nExecution logs:" in context:
        return "Thought: I have the sum.\n<code>\nfinal_answer(total)\n</code>"
    a, b = operands(context)
    return f"Thought: I add them with the tool.\n<code>\ntotal = add({a}, {b})\nprint(total)\n</code>"


# -- the harnesses, as their users write them ---------------------------------------------------------------


async def openai_agent(r) -> str:
    """A plain `openai` loop: call, run the tool calls, send the results back, until the model answers."""
    messages: list = [{"role": "user", "content": r.task.question}]
    for _ in range(4):
        reply = await r.client.chat.completions.create(
            model="any", messages=messages, tools=[ADD_TOOL], max_tokens=MAX_TOKENS
        )
        message = reply.choices[0].message
        messages.append(message.model_dump(exclude_none=True))
        if not message.tool_calls:
            return message.content or ""
        for call in message.tool_calls:
            result = add(**json.loads(call.function.arguments))
            messages.append({"role": "tool", "tool_call_id": call.id, "content": str(result)})
    return ""


def smolagents_add():
    """`add` as a smolagents tool (it reads the type hints and the Args section)."""
    from smolagents import tool

    @tool
    def add(a: int, b: int) -> int:
        """Add two integers.

        Args:
            a: the first integer.
            b: the second integer.
        """
        return a + b

    return add


KEEP_REPLY = {"tool-call": "user", "tool-response": "user"}  # smolagents' records as user turns: the reply as sampled


def smolagents_agent(r, system_prompt: str | None = None, roles: dict | None = KEEP_REPLY) -> str:
    """smolagents' CodeAgent with one tool, its model an `OpenAIServerModel` pointed at the rollout."""
    from smolagents import CodeAgent, OpenAIServerModel

    add = smolagents_add()
    model = OpenAIServerModel(
        "any",
        api_base=r.base_url,
        api_key=r.api_key,
        max_tokens=MAX_TOKENS,
        custom_role_conversions=roles,
    )
    agent = CodeAgent(tools=[add], model=model, max_steps=3, verbosity_level=0)
    if system_prompt is not None:  # smolagents' own way to replace its (long) system prompt
        agent.prompt_templates["system_prompt"] = system_prompt
    return str(agent.run(r.task.question))


async def agents_sdk_agent(r) -> str:
    """The OpenAI Agents SDK: an `Agent` with a function tool on chat completions, tracing off."""
    from agents import (
        Agent,
        OpenAIChatCompletionsModel,
        Runner,
        function_tool,
        set_default_openai_api,
        set_tracing_disabled,
    )
    from agents.model_settings import ModelSettings

    set_default_openai_api("chat_completions")
    set_tracing_disabled(True)
    agent = Agent(
        name="calculator",
        instructions="Use the add tool, then answer with the number.",
        tools=[function_tool(add)],
        model=OpenAIChatCompletionsModel(model="any", openai_client=r.client),
        model_settings=ModelSettings(max_tokens=MAX_TOKENS),
    )
    result = await Runner.run(agent, r.task.question, max_turns=4)
    return str(result.final_output)


async def langgraph_agent(r) -> str:
    """LangGraph's tool loop as its docs build it: a model node bound to the tool, a `ToolNode`, `tools_condition`."""
    from langchain_core.tools import tool
    from langchain_openai import ChatOpenAI
    from langgraph.graph import START, MessagesState, StateGraph
    from langgraph.prebuilt import ToolNode, tools_condition

    @tool("add")
    def add_tool(a: int, b: int) -> int:
        """Add two integers."""
        return add(a, b)

    import httpx

    http = httpx.AsyncClient()  # ChatOpenAI's own client is never closed: a harness closes what it opens
    model = ChatOpenAI(
        model="any",
        base_url=r.base_url,
        api_key=r.api_key,
        max_tokens=MAX_TOKENS,
        max_retries=0,
        http_async_client=http,
    )
    bound = model.bind_tools([add_tool])

    async def call_model(state: MessagesState) -> dict:
        return {"messages": [await bound.ainvoke(state["messages"])]}

    builder = StateGraph(MessagesState)
    builder.add_node("model", call_model)
    builder.add_node("tools", ToolNode([add_tool]))
    builder.add_edge(START, "model")
    builder.add_conditional_edges("model", tools_condition)
    builder.add_edge("tools", "model")
    async with http:
        state = await builder.compile().ainvoke({"messages": [("user", r.task.question)]})
    return str(state["messages"][-1].content)


HARNESSES = {
    "langgraph": (langgraph_agent, tool_call_script),
    "openai": (openai_agent, tool_call_script),
    "smolagents": (smolagents_agent, code_script),
    "agents_sdk": (agents_sdk_agent, tool_call_script),
}


def play(agent, policy) -> list[Trajectory]:
    runner = HarnessEpisodes(agent, limit_s=60)
    try:
        return asyncio.run(runner(TASKS, policy))
    finally:
        runner.close()


@pytest.mark.parametrize("name", sorted(HARNESSES))
def test_a_framework_plays_episodes_through_the_gateway(name, chatml_codec):
    agent, script = HARNESSES[name]
    trajs = play(agent, ScriptedPolicy(script, codec=chatml_codec, name=name))
    for task, traj in zip(TASKS, trajs, strict=True):
        assert traj.task.id == task.id and traj.termination == "submitted", traj.error
        assert traj.final_answer == task.golden_answers[0]
        calls = traj.metadata["gateway"]["calls"]
        assert len(traj.steps) == len(calls) == 2  # the tool call, then the answer: each call one step
        [segment] = traj.segments()  # token-faithful: one segment, no fork
        assert not traj.metadata["gateway"]["forks"] and task.question in chatml_codec.decode(segment["prompt_ids"])
        result = chatml_codec.decode(traj.steps[0].observation_ids)  # what the harness sent back: the tool's result
        assert task.golden_answers[0] in result and "<|im_end|>" in result
        sampled = [t for g in traj.segments() for t, m in zip(g["completion_ids"], g["env_mask"], strict=True) if m]
        assert sampled == [t for s in traj.steps for t in s.completion_ids]  # the mask is 1 on sampled ids only
    if name == "smolagents":  # CodeAgent asked to stop at its closing tag: recorded as asked and applied
        [first, *_] = trajs[0].metadata["gateway"]["calls"]
        assert "</code>" in first["sampling_requested"]["stop"] and first["finish_reason"] == "stop"
        assert chatml_codec.decode(trajs[0].steps[0].completion_ids).endswith("print(total)\n</code>")  # ids keep it


def test_smolagents_default_roles_edit_the_model_s_reply_so_each_step_forks(chatml_codec):
    """By default smolagents merges its "Calling tools:" record into the assistant message: the reply it sends
    back is not the one sampled, so each step is a new segment (counted; the docs give the setting above)."""
    agent = functools.partial(smolagents_agent, roles=None)
    [traj, *_] = play(agent, ScriptedPolicy(code_script, codec=chatml_codec))
    assert traj.final_answer == "3" and traj.metadata["gateway"]["forks"] == {"assistant_edited": 1}
    assert len(traj.segments()) == 2


OPENER = '<tool_call>\n{"name": "'


def required_call_script(context: str, _turn: int) -> str:
    """Completes the call the gateway opened (tool_choice="required"): `add`, then `final_answer` with its result."""
    assert context.endswith(OPENER), "the gateway opens the required call"
    results = re.findall(r"Observation:\n(.*?)(?:<\|im_end\|>|\n)", context)
    if results:
        return f'final_answer", "arguments": {{"answer": "{results[-1]}"}}}}\n</tool_call>'
    a, b = operands(context)
    return f'add", "arguments": {{"a": {a}, "b": {b}}}}}\n</tool_call>'


def smolagents_tool_calling_agent(r) -> str:
    """smolagents' ToolCallingAgent: it asks for tool_choice="required" on every call."""
    from smolagents import OpenAIServerModel, ToolCallingAgent

    add = smolagents_add()
    model = OpenAIServerModel("any", api_base=r.base_url, api_key=r.api_key, max_tokens=MAX_TOKENS)
    agent = ToolCallingAgent(tools=[add], model=model, max_steps=3, verbosity_level=0)
    agent.prompt_templates["system_prompt"] = "Call add, then final_answer."
    return str(agent.run(r.task.question))


def test_smolagents_tool_calling_agent_gets_its_required_calls(chatml_codec):
    """Each call asks for tool_choice="required": the gateway opens the call, the model completes it. The agent
    sends its call back as "Calling tools:" text, not as sampled, so its second step forks (assistant_edited)."""
    [traj, *_] = play(smolagents_tool_calling_agent, ScriptedPolicy(required_call_script, codec=chatml_codec))
    assert traj.termination == "submitted" and traj.final_answer == "3", traj.error
    calls = traj.metadata["gateway"]["calls"]
    assert [c["opener"] for c in calls] == [OPENER, OPENER] and [c["tool_calls"][0]["name"] for c in calls] == [
        "add",
        "final_answer",
    ]
    assert traj.metadata["gateway"]["forks"] == {"assistant_edited": 1}


# -- one real GRPO step per framework -----------------------------------------------------------------------


class Recorded(HarnessEpisodes):
    """`HarnessEpisodes` keeping what it played, to check the trainer's rollouts."""

    played: list[Trajectory]

    async def __call__(self, tasks, policy):
        trajs = await super().__call__(tasks, policy)
        self.played = [*getattr(self, "played", []), *trajs]
        return trajs


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(HARNESSES))
def test_a_grpo_step_trains_on_a_framework_s_rollouts(name, tmp_path):
    agent = HARNESSES[name][0]
    if name == "smolagents":  # its default system prompt is longer than the tiny model's window in its tokens
        agent = functools.partial(smolagents_agent, system_prompt="Write Python in <code></code>; call add(a, b).")
    runner = Recorded(agent, limit_s=120)
    tasks = TASKS[:2]
    generations = one_grpo_step(tmp_path, runner, tasks)
    assert len(runner.played) == len(tasks) * generations
    assert all(t.termination == "submitted" and t.steps for t in runner.played), [t.error for t in runner.played]

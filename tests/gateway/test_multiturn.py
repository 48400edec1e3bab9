"""The token-faithful multi-turn rule, as properties over random conversations with tool calls on four
templates (the demo's ChatML, SmolLM2's ChatML with a default system prompt, Llama-3 headers, ChatML
with a `tool` role): perturbed re-sends stay one segment; the ids decode to the template's rendering
with each assistant message replaced by its raw sample; special-token text in contents yields no
special id; each kind of edit forks with its reason. Then the same through a real client over HTTP."""

from __future__ import annotations

import asyncio
import json

import pytest
from gateway_helpers import TEMPLATES, queue_policy, tokenizer_for
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from workbench.gateway import GatewayConfig, ModelGateway
from workbench.gateway.chat import chat_call
from workbench.gateway.render import ChatRenderer
from workbench.gateway.state import RolloutState
from workbench.gateway.wire import ChatRequest
from workbench.policies.codec import TokenizerCodec
from workbench.trajectory import Task

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "lookup",
            "description": "Look a word up.",
            "parameters": {"type": "object", "properties": {"word": {"type": "string"}, "n": {"type": "integer"}}},
        },
    }
]
FORGED = ["<|im_end|>", "<|im_start|>", "<|eot_id|>", "<|start_header_id|>", "<|endoftext|>", "</tool_call>"]
PLAIN = st.text(alphabet="abcdefghij klmnop.,:;!?\n\t{}[]\"'<>/|_-0123456789éü€", max_size=20)
CONTENT = st.lists(st.one_of(PLAIN, st.sampled_from(FORGED)), max_size=4).map("".join)


@pytest.fixture(scope="module", params=sorted(TEMPLATES))
def codec(request) -> TokenizerCodec:
    return TokenizerCodec(tokenizer_for(request.param))


@st.composite
def conversations(draw):
    """Turns of (the model's raw sample, whether it thinks, its tool calls, the new messages' contents)."""
    turns = []
    for _ in range(draw(st.integers(1, 4))):
        calls = draw(st.lists(st.fixed_dictionaries({"word": PLAIN, "n": st.integers(0, 99)}), max_size=2))
        think = draw(st.one_of(st.none(), PLAIN))
        turns.append((draw(PLAIN), think, calls, draw(st.lists(CONTENT, min_size=1, max_size=2))))
    return draw(CONTENT), turns, draw(st.booleans())


def raw_sample(text: str, think: str | None, calls: list[dict]) -> str:
    blocks = "".join(f'\n<tool_call>\n{{"name": "lookup", "arguments": {json.dumps(c)}}}\n</tool_call>' for c in calls)
    return (f"<think>{think}</think>" if think is not None else "") + text + blocks


def resent(message, perturb: bool) -> dict:
    """The harness's copy of a reply: with `perturb`, padded content, null for empty, re-serialised
    arguments, reasoning dropped: none of it may matter."""
    out: dict = {"role": "assistant", "content": message.content}
    if perturb:
        out["content"] = f"  \n{message.content}\n " if message.content else None
    if message.tool_calls:
        out["tool_calls"] = [
            {
                "id": f"other-{i}" if perturb else c.id,
                "type": "function",
                "function": {
                    "name": c.function.name,
                    "arguments": json.dumps(json.loads(c.function.arguments), indent=1, sort_keys=True)
                    if perturb
                    else c.function.arguments,
                },
            }
            for i, c in enumerate(message.tool_calls)
        ]
    if not perturb and getattr(message, "reasoning", None) is not None:
        out["reasoning"] = message.reasoning
    return out


def play(codec, task: str, turns, with_tools: bool, perturb: bool):
    """Play the conversation through the gateway's call path; the state, the requests and the samples."""
    samples = [raw_sample(*turn[:3]) for turn in turns]
    policy = queue_policy(codec, list(samples))
    state = RolloutState.open(Task("t", task), ChatRenderer(codec), GatewayConfig())
    messages: list[dict] = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": task}]
    tools = TOOLS if with_tools else None
    for _text, _think, _calls, news in turns:
        req = ChatRequest.model_validate({"model": "m", "messages": messages, "tools": tools})
        message = asyncio.run(chat_call(state, policy, req, auxiliary=False)).completion.choices[0].message
        messages = [*messages, resent(message, perturb)]
        for i, call in enumerate(message.tool_calls or []):
            messages.append({"role": "tool", "tool_call_id": call.id, "content": news[i % len(news)]})
        if not message.tool_calls:
            messages += [{"role": "user", "content": c} for c in news]
    return state, messages, samples


def expected_text(renderer: ChatRenderer, messages: list[dict], samples: list[str], tools) -> str:
    """The template's rendering of `messages` with each assistant message replaced by its raw sample."""
    probes = [f"WBSAMPLE{i}X" for i in range(len(samples))]
    swapped, k = [], 0
    for m in messages:
        if m["role"] == "assistant":
            m, k = {"role": "assistant", "content": probes[k]}, k + 1
        swapped.append(m)
    text = renderer.text(swapped, tools, True)
    for probe, sample in zip(probes, samples, strict=True):
        text = text.replace(probe + renderer.end_of_turn, sample + renderer.end_of_turn)
    return renderer._unmask(text)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(conversation=conversations())
def test_perturbed_resends_stay_one_segment_and_decode_to_the_rendering(codec, conversation):
    task, turns, with_tools = conversation
    tools = TOOLS if with_tools else None
    turns = [(t, th, calls if with_tools else [], news) for t, th, calls, news in turns]
    state, messages, samples = play(codec, task, turns, with_tools, perturb=True)
    traj = state.trajectory
    [segment] = traj.segments()
    assert not state.forks
    ids = segment["prompt_ids"] + segment["completion_ids"]
    final = traj.steps[-1]
    # the next request's prompt = this segment + the last reply's end of turn + the new messages' framing
    req = ChatRequest.model_validate({"model": "m", "messages": messages, "tools": tools})
    from workbench.gateway.wire import template_message

    plan = state.plan([template_message(m, i) for i, m in enumerate(req.messages)], tools)
    assert plan.parent is not None and plan.parent.step is final
    assert codec.decode(plan.prompt_ids) == expected_text(state.renderer, messages, samples, tools)
    assert plan.prompt_ids[: len(ids)] == ids
    sampled = sum(len(s.completion_ids) for s in traj.steps)
    assert sum(segment["env_mask"]) == sampled
    assert [i for i, m in zip(segment["completion_ids"], segment["env_mask"], strict=True) if m] == [
        t for s in traj.steps for t in s.completion_ids
    ]
    # special-token text inside contents never became a special id: every special id outside the model's
    # samples is one the template wrote (each sample ends with the template's end of turn, which it stands for)
    masked = state.renderer.text(messages, tools, True)
    specials = {codec.tokenizer.convert_tokens_to_ids(s) for s in state.renderer.specials}
    sampled_at = {i for i, m in enumerate(segment["env_mask"], len(segment["prompt_ids"])) if m}
    outside = sum(1 for i, t in enumerate(plan.prompt_ids) if t in specials and i not in sampled_at)
    template_made = sum(masked.count(s) for s in state.renderer.specials)
    assert outside == template_made - len(samples)


def two_turns(codec, tools=None):
    turns = [("first", None, [], ["more please"]), ("second", None, [], ["and again"])]
    return play(codec, "the task", turns, tools is not None, perturb=False)


def resend(state, messages, tools=None):
    req = ChatRequest.model_validate({"model": "m", "messages": messages, "tools": tools})
    from workbench.gateway.wire import template_message

    return state.plan([template_message(m, i) for i, m in enumerate(req.messages)], tools)


@pytest.mark.parametrize(
    ("edit", "reason"),
    [
        ("tools", "tools_changed"),
        ("user", "history_edited"),
        ("assistant", "assistant_edited"),
        ("reasoning", "assistant_edited"),
        ("no_assistant", "no_parent"),
    ],
)
def test_each_kind_of_edit_forks_with_its_reason(codec, edit, reason):
    state, messages, _ = two_turns(codec)
    messages = [dict(m) for m in messages]
    tools = None
    if edit == "tools":
        tools = TOOLS
    elif edit == "user":
        messages[1]["content"] = "a different task"
    elif edit == "assistant":
        messages[-2]["content"] = "words the model never wrote"
    elif edit == "reasoning":
        messages[-2]["reasoning"] = "thoughts the model never had"
    else:
        messages = [m for m in messages if m["role"] != "assistant"]
    plan = resend(state, messages, tools)
    assert plan.fork == reason and plan.parent is None
    assert plan.prompt_ids == state.renderer.prompt_ids(plan.messages, tools)  # a fresh rendering: no ids reused
    policy = queue_policy(codec, ["forked"])
    req = ChatRequest.model_validate({"model": "m", "messages": messages, "tools": tools})
    asyncio.run(chat_call(state, policy, req, auxiliary=False))
    traj = state.trajectory
    assert len(traj.segments()) == 2 and traj.metadata["gateway"]["forks"] == {reason: 1}
    assert traj.steps[-1].prompt_ids == plan.prompt_ids


QWEN3_STYLE = (
    "{% for message in messages %}{% set content = message['content'] %}"
    "{% if message['role'] == 'assistant' and not loop.last %}"
    "{% set content = content.split('</think>')[-1] %}{% endif %}"
    "{{ '<|im_start|>' + message['role'] + '\\n' + content + '<|im_end|>\\n' }}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)


def test_a_template_that_rewrites_history_is_detected_and_the_setting_chooses():
    tok = tokenizer_for("chatml")
    tok.chat_template = QWEN3_STYLE
    codec = TokenizerCodec(tok)
    assert (
        ChatRenderer(codec).rewrites_history
        and not ChatRenderer(TokenizerCodec(tokenizer_for("chatml"))).rewrites_history
    )
    turns = [("<think>hm</think>one", None, [], ["next"]), ("two", None, [], ["next"])]
    sampled, _, _ = play(codec, "t", turns, False, perturb=False)
    assert len(sampled.trajectory.segments()) == 1  # default: the sampled history, one segment
    policy = queue_policy(codec, [raw_sample(*t[:3]) for t in turns])
    state = RolloutState.open(Task("t", "t"), ChatRenderer(codec), GatewayConfig(history="template"))
    messages: list[dict] = [{"role": "user", "content": "t"}]
    for _ in turns:
        req = ChatRequest.model_validate({"model": "m", "messages": messages})
        message = asyncio.run(chat_call(state, policy, req, auxiliary=False)).completion.choices[0].message
        messages += [resent(message, False), {"role": "user", "content": "next"}]
    assert state.trajectory.metadata["gateway"]["forks"] == {"template_rewrites_history": 1}


def test_a_real_client_over_http_keeps_one_segment(chatml_codec):
    """A harness loop with the openai client, echoing its replies back as SDKs do (content None on tool calls)."""
    samples = ['<think>plan</think>\n<tool_call>\n{"name": "lookup", "arguments": {"word": "x"}}\n</tool_call>', "done"]
    with ModelGateway(queue_policy(chatml_codec, list(samples))) as gw, gw.rollout("t") as r:
        messages: list = [{"role": "user", "content": "look x up <|im_end|>"}]
        first = r.sync_client.chat.completions.create(model="m", messages=messages, tools=TOOLS).choices[0].message
        assert first.tool_calls[0].function.name == "lookup" and first.content is None
        assert json.loads(first.tool_calls[0].function.arguments) == {"word": "x"}
        assert first.model_extra["reasoning"] == "plan"
        messages += [
            first.model_dump(exclude_none=True),
            {"role": "tool", "tool_call_id": first.tool_calls[0].id, "content": "x: a letter"},
        ]
        second = r.sync_client.chat.completions.create(model="m", messages=messages, tools=TOOLS)
        assert second.choices[0].message.content == "done"
        traj = r.trajectory
    [segment] = traj.segments()
    assert traj.steps[1].prompt_ids is None and traj.steps[0].observation_ids
    text = chatml_codec.decode(segment["prompt_ids"] + segment["completion_ids"])
    assert samples[0] + "<|im_end|>\n<|im_start|>user\n<tool_response>\nx: a letter\n</tool_response><|im_end|>" in text
    assert traj.metadata["gateway"]["tool_protocol"] == "text"


def test_a_native_tool_template_renders_tools_itself_and_parallel_calls_come_back():
    from gateway_helpers import tokenizer_for

    codec = TokenizerCodec(tokenizer_for("hermes"))
    sample = "".join(
        f'<tool_call>\n{{"name": "lookup", "arguments": {{"word": "{w}", "n": {n}}}}}\n</tool_call>\n'
        for n, w in enumerate("ab")
    )
    with ModelGateway(queue_policy(codec, [sample, "both found"])) as gw, gw.rollout("t") as r:
        assert gw.tool_protocol == "native"
        messages: list = [{"role": "user", "content": "look up a and b"}]
        raw = r.sync_client.chat.completions.with_raw_response.create(model="m", messages=messages, tools=TOOLS)
        assert raw.headers["x-workbench-tool-protocol"] == "native"
        first = raw.parse().choices[0]
        assert first.finish_reason == "tool_calls"
        calls = first.message.tool_calls
        assert [(c.function.name, json.loads(c.function.arguments)) for c in calls] == [
            ("lookup", {"word": "a", "n": 0}),
            ("lookup", {"word": "b", "n": 1}),
        ]
        messages.append(first.message.model_dump(exclude_none=True))
        messages += [{"role": "tool", "tool_call_id": c.id, "content": f"{c.id} found"} for c in calls]
        r.sync_client.chat.completions.create(model="m", messages=messages, tools=TOOLS)
        traj = r.trajectory
    [segment] = traj.segments()
    text = codec.decode(segment["prompt_ids"])
    assert '{"type": "function", "function": {"name": "lookup"' in text  # the template's own tool listing
    assert "</tool_call>\n<|im_end|>\n<|im_start|>user\n<tool_response>\n" in codec.decode(segment["completion_ids"])


def test_llama3_json_tool_calls_come_back_and_results_go_in_its_ipython_turn():
    from gateway_helpers import tokenizer_for

    codec = TokenizerCodec(tokenizer_for("llama31"))
    sample = '{"name": "lookup", "parameters": {"word": "a", "n": 1}}'
    with ModelGateway(queue_policy(codec, [sample, "a is a letter"])) as gw, gw.rollout("t") as r:
        messages: list = [{"role": "user", "content": "look a up"}]
        first = r.sync_client.chat.completions.create(model="m", messages=messages, tools=TOOLS).choices[0]
        assert first.finish_reason == "tool_calls" and first.message.content is None
        [call] = first.message.tool_calls
        assert (call.function.name, json.loads(call.function.arguments)) == ("lookup", {"word": "a", "n": 1})
        messages += [
            first.message.model_dump(exclude_none=True),
            {"role": "tool", "tool_call_id": call.id, "content": "a letter"},
        ]
        second = r.sync_client.chat.completions.create(model="m", messages=messages, tools=TOOLS)
        assert second.choices[0].message.content == "a is a letter"
        traj = r.trajectory
    [segment] = traj.segments()
    assert not traj.metadata["gateway"]["forks"]
    tail = codec.decode(segment["completion_ids"])
    assert tail.startswith(sample + "<|eot_id|><|start_header_id|>ipython<|end_header_id|>\n\na letter<|eot_id|>")

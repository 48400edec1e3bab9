"""`tool_choice="required"` and a named function: the gateway puts the call's opener after the assistant header
(prompt side, mask 0), the sample completes it, the reply is a tool call, and the next call continues the
recorded ids (opener included) in one segment. Bad forms are 400s naming `tool_choice`."""

from __future__ import annotations

import json

import openai
import pytest
from gateway_helpers import tokenizer_for

from workbench.gateway import ModelGateway
from workbench.policies import ScriptedPolicy
from workbench.policies.codec import TokenizerCodec

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": name,
            "description": f"The {name} tool.",
            "parameters": {"type": "object", "properties": {"q": {"type": "string"}}},
        },
    }
    for name in ("search", "lookup")
]
ARGS = '{"q": "x"}}\n</tool_call>'


def completing(opener: str, rest: str) -> ScriptedPolicy:
    """Completes a call only when the prompt ends with `opener` (what the gateway placed); else plain text."""
    codec = TokenizerCodec(tokenizer_for("chatml"))
    return ScriptedPolicy(
        lambda context, turn: rest if turn == 0 and context.endswith(opener) else f"plain {turn}",
        codec=codec,
        name="completing",
    )


@pytest.mark.parametrize(
    ("choice", "opener", "rest", "name"),
    [
        ("required", '<tool_call>\n{"name": "', 'lookup", "arguments": ' + ARGS, "lookup"),
        (
            {"type": "function", "function": {"name": "search"}},
            '<tool_call>\n{"name": "search", "arguments": ',
            ARGS,
            "search",
        ),
    ],
)
def test_a_required_call_is_opened_for_the_model_and_continued_in_one_segment(choice, opener, rest, name):
    policy = completing(opener, rest)
    with ModelGateway(policy) as gw, gw.rollout("t") as r:
        messages: list = [{"role": "user", "content": "find x"}]
        first = r.sync_client.chat.completions.create(model="m", messages=messages, tools=TOOLS, tool_choice=choice)
        [call] = first.choices[0].message.tool_calls
        assert first.choices[0].finish_reason == "tool_calls"
        assert (call.function.name, json.loads(call.function.arguments)) == (name, {"q": "x"})
        messages += [
            first.choices[0].message.model_dump(exclude_none=True),
            {"role": "tool", "tool_call_id": call.id, "content": "x is 4"},
        ]
        second = r.sync_client.chat.completions.create(model="m", messages=messages, tools=TOOLS)
        assert second.choices[0].message.content == "plain 1"
        traj = r.trajectory
    codec = policy.codec
    first_step, _ = traj.steps
    record = traj.metadata["gateway"]["calls"][0]
    assert record["opener"] == opener and codec.decode(first_step.completion_ids) == rest + "<|im_end|>"  # sampled ids

    assert codec.decode(first_step.prompt_ids).endswith("<|im_start|>assistant\n" + opener)
    [segment] = traj.segments()  # the next call continued the recorded ids, opener included
    assert not traj.metadata["gateway"]["forks"]
    ids, mask = segment["prompt_ids"] + segment["completion_ids"], [0] * len(segment["prompt_ids"])
    mask += segment["env_mask"]
    assert codec.decode(ids).count(opener + rest) == 1
    trained = codec.decode([t for t, m in zip(ids, mask, strict=True) if m])
    assert opener not in trained and rest in trained  # the opener is never trained on


@pytest.mark.parametrize(
    ("choice", "tools", "message"),
    [
        ({"type": "function", "function": {"name": "nope"}}, TOOLS, "no tool named 'nope'"),
        ({"type": "function"}, TOOLS, 'send "auto", "none", "required"'),
        ("sometimes", TOOLS, 'send "auto", "none", "required"'),
        ("required", None, "declares no tools"),
    ],
)
def test_a_bad_tool_choice_is_a_400_naming_it(gateway, choice, tools, message):
    with gateway.rollout("t") as r:
        kwargs = {"tools": tools} if tools else {}
        with pytest.raises(openai.BadRequestError) as err:
            r.sync_client.chat.completions.create(
                model="m", messages=[{"role": "user", "content": "q"}], tool_choice=choice, **kwargs
            )
        assert "tool_choice" in str(err.value) and message in str(err.value)
        ok = r.sync_client.chat.completions.create(model="m", messages=[{"role": "user", "content": "q"}])
        assert ok.choices[0].message.content == "turn 0"


@pytest.mark.parametrize(
    ("template", "name", "opener"),
    [
        ("hermes", None, '<tool_call>\n{"name": "'),
        ("hermes", 'say "hi"', '<tool_call>\n{"name": "say \\"hi\\"", "arguments": '),
        ("llama31", None, '{"name": "'),
        ("llama31", "lookup", '{"name": "lookup", "parameters": '),
    ],
)
def test_the_opener_follows_the_template_s_dialect(template, name, opener):
    from workbench.gateway.render import ChatRenderer

    assert ChatRenderer(TokenizerCodec(tokenizer_for(template))).call_opener(name) == opener

"""Streaming is synthesised from the finished generation: a streamed and an unstreamed request with
the same seed sample the same ids and show the same text; tool calls come as one delta each; usage
comes last when asked."""

from __future__ import annotations

import json

import pytest
from gateway_helpers import queue_policy

from workbench.gateway import ModelGateway

USER = [{"role": "user", "content": "Say something."}]
TOOLS = [{"type": "function", "function": {"name": "lookup", "parameters": {"type": "object"}}}]


@pytest.fixture(scope="module")
def tiny_policy(tmp_path_factory):
    from workbench.models import build_tiny_model, sample_texts
    from workbench.policies import TransformersPolicy

    return TransformersPolicy(build_tiny_model(tmp_path_factory.mktemp("tiny"), sample_texts(), vocab_size=400, seed=0))


def test_streamed_and_unstreamed_calls_with_a_seed_give_the_same_ids_and_text(tiny_policy):
    with ModelGateway(tiny_policy) as gw:
        with gw.rollout("a") as plain:
            whole = plain.sync_client.chat.completions.create(
                model="m", messages=USER, seed=11, temperature=1.0, max_tokens=24
            )
            plain_ids = plain.trajectory.steps[0].completion_ids
        with gw.rollout("b") as streamed:
            chunks = list(
                streamed.sync_client.chat.completions.create(
                    model="m",
                    messages=USER,
                    seed=11,
                    temperature=1.0,
                    max_tokens=24,
                    stream=True,
                    stream_options={"include_usage": True},
                )
            )
            traj = streamed.trajectory
    assert traj.steps[0].completion_ids == plain_ids
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == whole.choices[0].message.content
    assert chunks[-1].usage is not None and chunks[-1].usage.completion_tokens == len(plain_ids)
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == whole.choices[0].finish_reason
    assert traj.metadata["gateway"]["calls"][0]["streamed"] is True


def test_tool_calls_stream_as_one_delta_each(chatml_codec):
    sample = "".join(
        f'<tool_call>\n{{"name": "lookup", "arguments": {{"word": "{w}"}}}}\n</tool_call>\n' for w in ("a", "b")
    )
    with ModelGateway(queue_policy(chatml_codec, [sample])) as gw, gw.rollout("t") as r:
        chunks = list(r.sync_client.chat.completions.create(model="m", messages=USER, tools=TOOLS, stream=True))
    deltas = [d for c in chunks for d in (c.choices[0].delta.tool_calls or [])]
    assert [(d.index, d.function.name, json.loads(d.function.arguments)) for d in deltas] == [
        (0, "lookup", {"word": "a"}),
        (1, "lookup", {"word": "b"}),
    ]
    assert chunks[-1].choices[0].finish_reason == "tool_calls"


def test_completions_stream_too(chatml_codec):
    with ModelGateway(queue_policy(chatml_codec, ["hello there"])) as gw, gw.rollout("t") as r:
        chunks = list(r.sync_client.completions.create(model="m", prompt="Hi", max_tokens=30, stream=True))
    assert "".join(c.choices[0].text for c in chunks if c.choices) == "hello there"
    assert chunks[-1].choices[0].finish_reason == "stop"

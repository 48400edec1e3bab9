import asyncio

import pytest

from workbench.errors import ConfigError
from workbench.policies import ByteCodec, Policy, SamplingParams, ScriptedPolicy, generate

TURNS = [
    "<think>search first</think><code>print(search('France'))</code>",
    "<think>got it</think><code>answer('Paris')</code>",
    "Paris.",
]


def run_episode(policy, params, observation="\n<output>ok</output>\n"):
    codec = policy.codec
    context = codec.chat([{"role": "user", "content": "capital of France?"}])
    outs = []
    for _ in range(4):
        [c] = asyncio.run(policy.generate([context], params))
        outs.append(c)
        context = context + c.token_ids + codec.encode(observation)
    return outs


def test_from_turns_plays_turns_in_order_with_exact_ids():
    policy = ScriptedPolicy.from_turns(TURNS)
    assert isinstance(policy, Policy)
    outs = run_episode(policy, SamplingParams(stop=["</code>"]))
    assert [o.text for o in outs] == [TURNS[0], TURNS[1], TURNS[2], TURNS[2]]
    assert [o.finish_reason for o in outs] == ["stop", "stop", "eos", "eos"]
    assert outs[0].token_ids == list(TURNS[0].encode())
    assert outs[2].token_ids[-1] == ByteCodec.eos_token_id
    for o in outs:
        assert policy.codec.decode(o.token_ids) == o.text
        assert o.logprobs == [0.0] * len(o.token_ids)


def test_turn_comes_from_the_context_so_episodes_interleave():
    policy = ScriptedPolicy.from_turns(TURNS)
    params = SamplingParams(stop=["</code>"])
    codec = policy.codec
    a = codec.chat([{"role": "user", "content": "a"}])
    b = codec.chat([{"role": "user", "content": "b"}])
    [a1], [b1] = generate(policy, [a], params), generate(policy, [b], params)
    a = a + a1.token_ids + codec.encode("<output>1</output>")
    [a2] = generate(policy, [a], params)
    [b1_again] = generate(policy, [b], params)  # a fresh episode with the same task starts over
    assert (a1.text, a2.text, b1.text, b1_again.text) == (TURNS[0], TURNS[1], TURNS[0], TURNS[0])


def test_callable_sees_context_and_turn_and_stop_cuts():
    seen = []

    def fn(context, turn):
        seen.append((context, turn))
        return f"<code>x = {turn}</code> trailing text"

    policy = ScriptedPolicy(fn)
    [c] = generate(policy, [policy.codec.encode("hello")], SamplingParams(stop=["</code>"]))
    assert c.text == "<code>x = 0</code>" and c.finish_reason == "stop"
    assert seen == [("hello", 0)]


def test_max_new_tokens_gives_length():
    policy = ScriptedPolicy.from_turns(["abcdefgh"])
    [c] = generate(policy, [[1]], SamplingParams(max_new_tokens=3))
    assert (c.text, c.token_ids, c.finish_reason) == ("abc", [97, 98, 99], "length")
    [c] = generate(policy, [[1]], SamplingParams(max_new_tokens=8))  # 8 bytes + EOS does not fit
    assert c.finish_reason == "length" and c.text == "abcdefgh"


def test_any_codec_works(tiny_policy):
    policy = ScriptedPolicy.from_turns(["<think>t</think><code>print(1)</code>"], codec=tiny_policy.codec)
    [c] = generate(
        policy, [tiny_policy.codec.chat([{"role": "user", "content": "q"}])], SamplingParams(stop=["</code>"])
    )
    assert c.token_ids == tiny_policy.codec.encode(c.text)
    assert c.token_ids[-1] == tiny_policy.codec.encode("</code>")[0]


def test_bad_scripts_fail_clearly():
    with pytest.raises(ConfigError):
        ScriptedPolicy.from_turns([])
    with pytest.raises(ConfigError):
        ScriptedPolicy("not callable")
    policy = ScriptedPolicy(lambda ctx, turn: 42)
    with pytest.raises(ConfigError, match="must return a str"):
        generate(policy, [[1]], SamplingParams())


class _AsyncOnly:
    """A policy with nothing but the async protocol (as a user's own backend may be)."""

    name, codec, context_size = "async-only", ByteCodec(), None

    async def generate(self, prompts, params):
        await asyncio.sleep(0)
        return [ScriptedPolicy.from_turns(["hi"]).complete(list(p), params) for p in prompts]

    def describe(self):
        return {"backend": "test"}


def test_generate_is_the_one_blocking_call_for_any_policy():
    params = SamplingParams(max_new_tokens=8)
    [fast] = generate(ScriptedPolicy.from_turns(["hi"]), [[1]], params)  # a local backend's own blocking path
    [slow] = generate(_AsyncOnly(), [[1]], params)  # any other policy: its coroutine on a helper loop
    assert fast.text == slow.text == "hi"

    async def inside_a_running_loop():  # as in Jupyter
        return generate(_AsyncOnly(), [[1]], params)

    assert asyncio.run(inside_a_running_loop())[0].text == "hi"
    with pytest.warns(DeprecationWarning, match=r"workbench\.policies\.generate"):
        [old] = ScriptedPolicy.from_turns(["hi"]).generate_sync([[1]], params)
    assert old.text == "hi"

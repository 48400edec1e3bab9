import asyncio
import math

import pytest

from workbench.errors import ConfigError, PolicyError
from workbench.policies import Codec, Policy, SamplingParams, TransformersPolicy, generate
from workbench.policies.batching import BatchStats


def test_is_a_policy_with_exact_codec(tiny_policy):
    assert isinstance(tiny_policy, Policy)
    assert isinstance(tiny_policy.codec, Codec)
    text = "<think>plan</think>\n<code>print('é 日本')</code>\n<output>x</output>"
    assert tiny_policy.codec.decode(tiny_policy.codec.encode(text)) == text
    assert tiny_policy.describe()["backend"] == "transformers"


def test_greedy_is_deterministic_and_consistent(tiny_policy, chat_prompts):
    params = SamplingParams(max_new_tokens=24, temperature=0)
    a = generate(tiny_policy, chat_prompts, params)
    b = generate(tiny_policy, chat_prompts, params)
    assert [c.token_ids for c in a] == [c.token_ids for c in b]
    for c in a:
        assert c.finish_reason in ("length", "eos")
        shown = c.token_ids[:-1] if c.finish_reason == "eos" else c.token_ids
        assert tiny_policy.codec.decode(shown) == c.text
        assert len(c.logprobs) == len(c.token_ids)
        assert all(math.isfinite(lp) and lp <= 0 for lp in c.logprobs)


def test_seeded_sampling_repeats_and_seeds_differ(tiny_policy, chat_prompts):
    p = chat_prompts[:1] * 2
    a = generate(tiny_policy, p, SamplingParams(max_new_tokens=20, seed=7))
    b = generate(tiny_policy, p, SamplingParams(max_new_tokens=20, seed=7))
    assert [c.token_ids for c in a] == [c.token_ids for c in b]
    assert a[0].token_ids != a[1].token_ids  # prompt i samples with seed + i
    for c in a:
        assert tiny_policy.codec.decode(c.token_ids) == c.text
        assert all(math.isfinite(lp) and lp <= 0 for lp in c.logprobs)


def test_stop_string_trims_text_and_ids_together(tiny_policy, chat_prompts):
    params = SamplingParams(max_new_tokens=30, temperature=1.0, seed=11)
    [free] = generate(tiny_policy, chat_prompts[:1], params)
    assert len(free.token_ids) >= 12, "the tiny model should run on without a stop"
    stop = tiny_policy.codec.decode(free.token_ids[8:10])  # a string the model is about to produce
    assert stop
    [cut] = generate(
        tiny_policy, chat_prompts[:1], SamplingParams(max_new_tokens=30, temperature=1.0, seed=11, stop=[stop])
    )
    assert cut.finish_reason == "stop"
    assert cut.text.endswith(stop) and cut.text.count(stop) == 1
    assert cut.token_ids == free.token_ids[: len(cut.token_ids)]
    assert cut.logprobs == free.logprobs[: len(cut.token_ids)]
    assert tiny_policy.codec.decode(cut.token_ids) == cut.text
    assert len(cut.token_ids) <= 10
    # one token fewer and the stop string is not there yet: the cut is at the first possible token
    assert stop not in tiny_policy.codec.decode(cut.token_ids[:-1])


def test_tag_stop_string_is_a_single_token(tiny_policy):
    ids = tiny_policy.codec.encode("</code>")
    assert len(ids) == 1


def test_concurrent_calls_are_merged_and_match_unbatched(tiny_policy, chat_prompts):
    greedy = SamplingParams(max_new_tokens=16, temperature=0)
    seeded = SamplingParams(max_new_tokens=16, temperature=1.0, seed=5)
    alone_g = [generate(tiny_policy, [p], greedy)[0] for p in chat_prompts]
    alone_s = [generate(tiny_policy, [p], seeded)[0] for p in chat_prompts]

    async def together():
        calls = [tiny_policy.generate([p], greedy) for p in chat_prompts]
        calls += [tiny_policy.generate([p], seeded) for p in chat_prompts]
        return await asyncio.gather(*calls)

    tiny_policy.stats = BatchStats()
    outs = [o[0] for o in asyncio.run(together())]
    assert tiny_policy.stats.max_batch > 1, "concurrent calls should share a batch"
    assert tiny_policy.stats.batches < len(outs)
    for mine, ref in zip(outs, alone_g + alone_s, strict=True):
        assert mine.token_ids == ref.token_ids
        assert mine.text == ref.text
        assert mine.finish_reason == ref.finish_reason
        assert mine.logprobs == pytest.approx(ref.logprobs, abs=1e-4)


def test_eos_ends_with_the_eos_id_and_text_hides_it(tiny_model_dir):
    import torch

    policy = TransformersPolicy(tiny_model_dir, device="cpu")
    eos = policy.codec.eos_token_id
    with torch.no_grad():  # make EOS the model's favourite token (embeddings are tied to the head)
        policy.model.model.embed_tokens.weight[eos] *= 0
        policy.model.model.embed_tokens.weight[eos] += policy.model.model.norm.weight.detach() * 5
    [c] = generate(
        policy,
        [policy.codec.chat([{"role": "user", "content": "hi"}])],
        SamplingParams(max_new_tokens=50, temperature=0),
    )
    assert c.finish_reason == "eos"
    assert c.token_ids[-1] == eos
    assert policy.codec.decode(c.token_ids[:-1]) == c.text
    assert "<|im_end|>" not in c.text


def test_from_model_wraps_a_live_model_and_restores_train_mode(tiny_policy, chat_prompts):
    live = TransformersPolicy.from_model(tiny_policy.model, tiny_policy.tokenizer)
    tiny_policy.model.train()
    try:
        params = SamplingParams(max_new_tokens=8, temperature=0)
        assert (
            generate(live, chat_prompts[:1], params)[0].token_ids
            == generate(tiny_policy, chat_prompts[:1], params)[0].token_ids
        )
        assert tiny_policy.model.training
    finally:
        tiny_policy.model.eval()


def test_bad_input_gives_clear_errors(tiny_policy, tmp_path):
    with pytest.raises(ConfigError, match="build_tiny_model"):
        TransformersPolicy(tmp_path / "nope")
    with pytest.raises(PolicyError, match="token ids"):
        generate(tiny_policy, ["a string"], SamplingParams())
    with pytest.raises(ConfigError, match="temperature"):
        generate(tiny_policy, [[1, 2]], SamplingParams(temperature=-1))
    with pytest.raises(ConfigError, match="stop=\\["):
        generate(tiny_policy, [[1, 2]], SamplingParams(stop="</code>"))
    with pytest.raises(PolicyError, match="context"):
        generate(tiny_policy, [[5] * 5000], SamplingParams())

"""TransformersPolicy keeps a finished row's KV cache: a later prompt that extends it (an episode's next
turn) prefills only its new tokens, with the same tokens and logprobs as a full prefill; a weight
change, an adapter switch or a full budget empties or trims the cache; nothing stale is reused."""

from __future__ import annotations

import asyncio

import pytest
import torch

from workbench.policies import SamplingParams, TransformersPolicy
from workbench.policies.prefix_cache import PrefixCache

GREEDY = SamplingParams(max_new_tokens=12, temperature=0)
OBSERVATION = [5, 6, 7, 8, 9]


def episode(policy: TransformersPolicy, prompt: list[int], turns: int = 3, params: SamplingParams = GREEDY):
    """Turns of one episode: each turn's prompt is the last prompt, its completion and an observation."""

    async def run():
        outs, ctx = [], list(prompt)
        for _ in range(turns):
            [out] = await policy.generate([ctx], params)
            outs.append(out)
            ctx = ctx + list(out.token_ids) + OBSERVATION
        return outs

    return asyncio.run(run())


def count_prefilled(policy: TransformersPolicy) -> list[int]:
    """Record the number of input tokens of every forward pass of more than one token."""
    seen: list[int] = []
    forward = policy.model.forward

    def counted(*args, **kwargs):
        ids = kwargs["input_ids"]
        if ids.shape[1] > 1:
            seen.append(int(ids.shape[1]))
        return forward(*args, **kwargs)

    policy.model.forward = counted
    return seen


@pytest.fixture
def cached(tiny_model_dir):
    return TransformersPolicy(tiny_model_dir, device="cpu", batch_window_ms=0)


@pytest.fixture
def uncached(tiny_model_dir):
    return TransformersPolicy(tiny_model_dir, device="cpu", batch_window_ms=0, prefix_cache_mb=0)


def test_a_next_turn_prefills_only_its_new_tokens_and_matches_a_full_prefill(cached, uncached, chat_prompts):
    prefilled = count_prefilled(cached)
    with_cache = episode(cached, chat_prompts[2])
    without = episode(uncached, chat_prompts[2])
    assert [o.token_ids for o in with_cache] == [o.token_ids for o in without]
    for a, b in zip(with_cache, without, strict=True):
        assert a.logprobs == pytest.approx(b.logprobs, abs=1e-4)
        assert a.raw_logprobs == pytest.approx(b.raw_logprobs, abs=1e-4)
    # turn 1 prefills the prompt; later turns only the last sampled token (never fed) and the observation
    assert prefilled[0] == len(chat_prompts[2])
    assert prefilled[1:] == [1 + len(OBSERVATION)] * 2
    assert cached.prefix_cache.stats.hits == 2 and cached.prefix_cache.stats.reused_tokens > 0


def test_sampled_turns_are_the_same_with_and_without_the_cache(cached, uncached, chat_prompts):
    params = SamplingParams(max_new_tokens=10, temperature=1.0, seed=7)
    assert [o.token_ids for o in episode(cached, chat_prompts[0], params=params)] == [
        o.token_ids for o in episode(uncached, chat_prompts[0], params=params)
    ]


def test_a_prompt_that_shares_only_part_of_a_cached_row_is_prefilled_whole(cached, chat_prompts):
    [first] = episode(cached, chat_prompts[2], turns=1)
    prefilled = count_prefilled(cached)
    edited = list(chat_prompts[2]) + list(first.token_ids[:3]) + [11, 12]  # diverges after 3 generated tokens
    again = list(chat_prompts[2])  # the same prompt asked again: bit-identical logprobs need a full prefill
    episode(cached, edited, turns=1)
    [repeat] = episode(cached, again, turns=1)
    assert prefilled == [len(edited), len(again)]
    assert repeat.token_ids == first.token_ids and repeat.logprobs == first.logprobs
    assert len(cached.prefix_cache.entries) == 3 and cached.prefix_cache.stats.hits == 0


def test_an_optimizer_step_empties_the_cache(tiny_model_dir, chat_prompts):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir)
    policy = TransformersPolicy.from_model(model, AutoTokenizer.from_pretrained(tiny_model_dir), batch_window_ms=0)
    [out] = episode(policy, chat_prompts[0], turns=1)
    assert len(policy.prefix_cache.entries) == 1
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    model(input_ids=torch.tensor([chat_prompts[0]]), labels=torch.tensor([chat_prompts[0]])).loss.backward()
    opt.step()
    prefilled = count_prefilled(policy)
    episode(policy, list(chat_prompts[0]) + list(out.token_ids) + OBSERVATION, turns=1)
    assert prefilled == [len(chat_prompts[0]) + len(out.token_ids) + len(OBSERVATION)]  # all of it again
    assert policy.prefix_cache.stats.cleared == 1 and policy.prefix_cache.stats.hits == 0


def test_the_cache_stays_within_its_budget_dropping_the_oldest_rows():
    def layers(n: int) -> list[tuple[torch.Tensor, torch.Tensor]]:
        return [(torch.zeros(1, 2, n, 4), torch.zeros(1, 2, n, 4))]  # 2 * 2*n*4 floats = 64n bytes

    cache = PrefixCache(max_bytes=64 * 25)
    cache.store([1, 2, 3, 4, 5, 6, 7, 8, 9, 10], layers(10))
    cache.store([2] * 10, layers(10))
    cache.store([3] * 10, layers(10))  # 30 tokens do not fit 25: the first row goes
    assert cache.nbytes == 64 * 20 and len(cache.entries) == 2
    assert cache.take([1, 2, 3, 4, 99]) is None  # the first row was dropped
    assert cache.take([2] * 10) is None  # a row must be a proper prefix: one token is left to prefill
    length, [(keys, _)] = cache.take([2] * 10 + [9])
    assert length == 10 and keys.shape == (1, 2, 10, 4) and cache.nbytes == 64 * 10
    cache.store([4] * 40, layers(40))  # larger than the whole budget: not kept, nothing dropped
    assert len(cache.entries) == 1


def test_the_longest_cached_prefix_wins():
    cache = PrefixCache(max_bytes=1 << 20)
    for n in (2, 4, 3):
        cache.store(list(range(n)), [(torch.full((1, 1, n, 2), float(n)), torch.zeros(1, 1, n, 2))])
    length, [(keys, _)] = cache.take(list(range(6)))
    assert length == 4 and bool((keys == 4).all())
    assert cache.take([7]) is None and len(cache.entries) == 2

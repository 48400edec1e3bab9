"""TransformersPolicy batches continuously: a row that ends goes back to its caller at once, a call made
while a batch runs joins it, and a row's tokens do not depend on when it joined or what it ran with."""

from __future__ import annotations

import asyncio

import pytest

from workbench.policies import SamplingParams, TransformersPolicy
from workbench.policies.batching import BatchStats
from workbench.policies.sampling import LogitControls

LONG = 40  # tokens of the row that keeps the batch running


def no_eos(policy: TransformersPolicy) -> LogitControls:
    """Controls that keep a row from ending before its token limit."""
    return LogitControls(logit_bias=dict.fromkeys(policy.eos_ids, -100.0))


@pytest.fixture
def policy(tiny_model_dir):
    return TransformersPolicy(tiny_model_dir, device="cpu", batch_window_ms=0)


def count_forwards(policy: TransformersPolicy, on_step) -> list[int]:
    """Call `on_step(n)` (in the worker thread) after each forward pass of the model; returns the counter."""
    calls = [0]
    forward = policy.model.forward

    def counted(*args, **kwargs):
        out = forward(*args, **kwargs)
        calls[0] += 1
        on_step(calls[0])
        return out

    policy.model.forward = counted
    return calls


def test_a_short_row_returns_while_a_long_one_still_decodes(policy, chat_prompts):
    controls = no_eos(policy)
    long_params = SamplingParams(max_new_tokens=LONG, temperature=0)
    short_params = SamplingParams(max_new_tokens=2, temperature=0)

    async def run():
        long = asyncio.ensure_future(policy.generate([chat_prompts[0]], long_params, controls=controls))
        short = asyncio.ensure_future(policy.generate([chat_prompts[1]], short_params, controls=controls))
        [short_out] = await short
        long_running_when_short_returned = not long.done()
        [long_out] = await long
        return short_out, long_out, long_running_when_short_returned

    short_out, long_out, overlapped = asyncio.run(run())
    assert overlapped, "the short row waited for the long one"
    assert len(short_out.token_ids) == 2 and len(long_out.token_ids) == LONG
    assert policy.stats.batches == 1 and policy.stats.max_batch == 2


@pytest.mark.parametrize("sampling", ["greedy", "seeded"])
def test_a_call_made_mid_batch_joins_it_with_the_tokens_it_gets_alone(policy, chat_prompts, sampling):
    controls = no_eos(policy)
    temperature, seed = (0.0, None) if sampling == "greedy" else (1.0, 11)
    long_params = SamplingParams(max_new_tokens=LONG, temperature=temperature, seed=seed)
    late_params = SamplingParams(max_new_tokens=12, temperature=temperature, seed=seed)
    [late_alone] = asyncio.run(policy.generate([chat_prompts[2]], late_params, controls=controls))
    [long_alone] = asyncio.run(policy.generate([chat_prompts[0]], long_params, controls=controls))

    async def run():
        loop = asyncio.get_running_loop()
        decoding = asyncio.Event()
        count_forwards(policy, lambda n: n == 5 and loop.call_soon_threadsafe(decoding.set))
        long = asyncio.ensure_future(policy.generate([chat_prompts[0]], long_params, controls=controls))
        await decoding.wait()  # the long row is 4 tokens in
        late = await policy.generate([chat_prompts[2]], late_params, controls=controls)
        return (await long)[0], late[0], long.done()

    policy.stats = BatchStats()
    long_out, late_out, _ = asyncio.run(run())
    assert policy.stats.batches == 1, "the late call should join the running batch, not start its own"
    assert policy.stats.rows == 2 and policy.stats.max_batch == 2
    assert late_out.token_ids == late_alone.token_ids and long_out.token_ids == long_alone.token_ids
    assert late_out.logprobs == pytest.approx(late_alone.logprobs, abs=1e-4)
    assert long_out.raw_logprobs == pytest.approx(long_alone.raw_logprobs, abs=1e-4)


def test_rows_of_every_length_come_back_right_from_one_running_batch(policy, chat_prompts):
    """Many calls of different lengths, joining and leaving: each equals its own unbatched run."""
    controls = no_eos(policy)
    params = [SamplingParams(max_new_tokens=n, temperature=0) for n in (1, 3, 7, 20, 5, 2)]
    prompts = [chat_prompts[i % len(chat_prompts)] for i in range(len(params))]
    alone = [asyncio.run(policy.generate([p], sp, controls=controls))[0] for p, sp in zip(prompts, params, strict=True)]

    async def staggered():
        outs = []
        for p, sp in zip(prompts, params, strict=True):
            outs.append(asyncio.ensure_future(policy.generate([p], sp, controls=controls)))
            await asyncio.sleep(0.01)  # arrive while others run (any timing gives the same tokens)
        return [(await o)[0] for o in outs]

    for mine, ref in zip(asyncio.run(staggered()), alone, strict=True):
        assert mine.token_ids == ref.token_ids and mine.text == ref.text and mine.finish_reason == ref.finish_reason


def test_a_backend_without_decode_steps_streams_in_fixed_batches():
    """`BatchingBackend._run_stream`'s default: each take of the feed runs as one `_run_rows` batch."""
    from typing import ClassVar

    from workbench.policies.base import ByteCodec, Completion
    from workbench.policies.batching import BatchingBackend, Row

    class Echo(BatchingBackend):
        streams = True
        codec = ByteCodec()
        name = "echo"
        batches: ClassVar[list[int]] = []

        def _run_rows(self, rows: list[Row]) -> list[Completion]:
            self.batches.append(len(rows))
            return [Completion("", r.prompt[::-1], [0.0] * len(r.prompt), "stop") for r in rows]

    echo = Echo(batch_window_ms=20, max_batch_size=3)
    prompts = [[i, i + 1] for i in range(5)]

    async def run():
        calls = [echo.generate([p], SamplingParams(max_new_tokens=2)) for p in prompts]
        return await asyncio.gather(*calls)

    outs = asyncio.run(run())
    assert [o.token_ids for [o] in outs] == [p[::-1] for p in prompts]
    assert sorted(Echo.batches, reverse=True) == [3, 2] and echo.stats.max_batch == 3


def test_the_model_is_back_in_its_own_mode_when_a_row_is_handed_back(tiny_model_dir, chat_prompts):
    """A trainer reads `model.training` once its episodes end (TRL files a step's metrics under "train" or
    "eval" by it): the policy's eval mode must be gone by the time any completion is handed back."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from workbench.policies.batching import FixedFeed, make_rows

    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir).train()
    policy = TransformersPolicy.from_model(model, AutoTokenizer.from_pretrained(tiny_model_dir), batch_window_ms=0)
    seen_in_forward: list[bool] = []
    forward = model.forward

    def recording(*args, **kwargs):
        seen_in_forward.append(model.training)
        return forward(*args, **kwargs)

    model.forward = recording
    rows = make_rows(chat_prompts, SamplingParams(max_new_tokens=4, temperature=0))
    feed = FixedFeed(rows)
    modes_at_finish: list[bool] = []
    finish = feed.finish
    feed.finish = lambda key, completion: (modes_at_finish.append(model.training), finish(key, completion))
    policy._run_stream(feed)
    assert len(feed.completions()) == 3 and modes_at_finish == [True, True, True]
    assert seen_in_forward and not any(seen_in_forward)  # every forward ran in eval mode

"""The model's own logprobs beside the processed ones: `Completion.raw_logprobs` is the log-softmax
of the unprocessed logits at each sampled token, whatever temperature, top-k or logit controls did."""

import pytest
import torch

from workbench.policies import SamplingParams, ScriptedPolicy, generate
from workbench.policies.sampling import LogitControls

TOL = 1e-4


def _forward_logprobs(policy, prompt, completion, temperature=None):
    """An independent forward pass over prompt + completion (no cache, no padding): the log-softmax
    of the logits (divided by `temperature` when given) at each completion token."""
    ids = torch.tensor([prompt + completion])
    with torch.inference_mode():
        logits = policy.model(input_ids=ids).logits[0, len(prompt) - 1 : -1].float()
    if temperature:
        logits = logits / temperature
    return logits.log_softmax(-1).gather(1, torch.tensor(completion)[:, None])[:, 0]


def _close(values, expected):
    return torch.allclose(torch.tensor(values), expected, atol=TOL)


def test_greedy_raw_logprobs_are_the_models_and_equal_processed(tiny_policy, chat_prompts):
    outs = generate(tiny_policy, chat_prompts, SamplingParams(max_new_tokens=12, temperature=0))
    for prompt, out in zip(chat_prompts, outs, strict=True):
        assert out.raw_logprobs is not None and len(out.raw_logprobs) == len(out.token_ids)
        expected = _forward_logprobs(tiny_policy, prompt, out.token_ids)
        assert _close(out.raw_logprobs, expected)
        assert _close(out.logprobs, expected)  # greedy: processed is the unscaled, unfiltered log-softmax


def test_sampled_raw_logprobs_stay_the_models_while_processed_follow_the_sampler(tiny_policy, chat_prompts):
    params = SamplingParams(max_new_tokens=16, temperature=0.7, top_k=5, seed=3)
    outs = generate(tiny_policy, chat_prompts, params)
    differs = 0.0
    for prompt, out in zip(chat_prompts, outs, strict=True):
        raw_expected = _forward_logprobs(tiny_policy, prompt, out.token_ids)
        assert _close(out.raw_logprobs, raw_expected)
        scaled = _forward_logprobs(tiny_policy, prompt, out.token_ids, temperature=0.7)
        # top-k renormalises over 5 candidates: a processed logprob is at least the scaled one
        assert all(p >= s - TOL for p, s in zip(out.logprobs, scaled.tolist(), strict=True))
        differs = max(differs, float((torch.tensor(out.logprobs) - raw_expected).abs().max()))
    assert differs > 0.05, "temperature 0.7 and top-k 5 must move the processed logprobs away from raw"


def test_logit_controls_leave_raw_logprobs_alone(tiny_policy, chat_prompts):
    prompt = chat_prompts[0]
    [plain] = generate(tiny_policy, [prompt], SamplingParams(max_new_tokens=6, temperature=0))
    banned = plain.token_ids[0]
    controls = LogitControls(logit_bias={banned: -100})
    [out] = generate(tiny_policy, [prompt], SamplingParams(max_new_tokens=6, temperature=0), controls=controls)
    assert out.token_ids[0] != banned
    assert _close(out.raw_logprobs, _forward_logprobs(tiny_policy, prompt, out.token_ids))
    assert out.logprobs[0] > out.raw_logprobs[0]  # the processed one renormalised without the banned token


def test_scripted_policies_give_no_raw_logprobs():
    policy = ScriptedPolicy(lambda context, turn: "<code>print(1)</code>")
    [out] = generate(policy, [policy.codec.chat([{"role": "user", "content": "q"}])], SamplingParams())
    assert out.raw_logprobs is None


def test_describe_says_what_each_kind_is(tiny_policy):
    said = tiny_policy.describe()
    assert said["logprobs"].startswith("processed")
    assert "own" in said["raw_logprobs"]


@pytest.mark.parametrize("mode", ["raw_logits", "processed_logits"])
def test_vllm_refuses_a_logprobs_mode_that_returns_logits(mode, tiny_model_dir):
    from workbench.errors import ConfigError
    from workbench.policies import VLLMPolicy

    with pytest.raises(ConfigError, match="not logprobs"):
        VLLMPolicy(tiny_model_dir, logprobs_mode=mode)

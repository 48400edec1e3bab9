"""Both roles' LoRA adapters served by one vLLM engine (`workbench.policies.vllm_adapters`): each role samples
with its own adapter's tensors (logprobs equal peft's), and after an optimizer step on one role its next
batch samples from the stepped tensors while the other role's served adapter stays as it was."""

from __future__ import annotations

import asyncio

import pytest
import torch

from workbench.policies import SamplingParams
from workbench.trajectory import Task

pytestmark = [pytest.mark.vllm, pytest.mark.slow]
ROLES = ("solver", "proposer")


def peft_logprobs(adapters, role: str, prompt: list[int], completion: list[int]) -> list[float]:
    """The model's own logprob of each completion token, with `role`'s adapter (temperature 1)."""
    ids = torch.tensor([prompt + completion])
    with adapters.using(role), torch.no_grad():
        logits = adapters.model(ids).logits[0, len(prompt) - 1 : -1].log_softmax(-1)
    return logits.gather(1, torch.tensor(completion)[:, None])[:, 0].tolist()


def sample(policy, prompt: list[int]):
    params = SamplingParams(max_new_tokens=6, temperature=1.0, seed=3)
    [out] = asyncio.run(policy.generate([prompt], params))
    return out


@pytest.fixture(scope="module")
def served(vllm_model_dir, vllm_engine, tmp_path_factory):
    """A RoleAdapters model on the session's agent model (each role's lora_B drawn at random, so the two
    roles and the base differ) and each role's policy over an engine that serves adapters."""
    from workbench.models.load import load_causal_lm
    from workbench.policies.vllm_adapters import AdapterVLLMPolicy, adapter_engine
    from workbench.train.lora import RoleAdapters

    model, tok, _ = load_causal_lm(vllm_model_dir, device="cpu", dtype="float32")
    adapters = RoleAdapters(model, ROLES, rank=8, seed=0)
    gen = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for name, p in adapters.model.named_parameters():
            if "lora_B" in name:
                p.copy_(torch.randn(p.shape, generator=gen) * 0.05)
    llm = adapter_engine(vllm_model_dir, rank=8, roles=2, kv_cache_gib=1)
    workdir = tmp_path_factory.mktemp("served")
    policies = {role: AdapterVLLMPolicy(llm, adapters, role, workdir) for role in ROLES}
    return adapters, tok, policies, workdir  # the engine stays for the session: dropping one tears vLLM's groups down


def test_each_role_samples_with_its_own_adapter(served):
    adapters, tok, policies, _ = served
    prompt = tok("Paris is the capital of")["input_ids"]
    seen = {}
    for role in ROLES:
        out = sample(policies[role], prompt)
        expected = peft_logprobs(adapters, role, prompt, out.token_ids)
        assert out.logprobs == pytest.approx(expected, abs=2e-3)
        seen[role] = expected
    # the two adapters really differ: the solver's tokens score differently under the proposer's adapter
    solver_tokens = sample(policies["solver"], prompt).token_ids
    other = peft_logprobs(adapters, "proposer", prompt, solver_tokens)
    assert max(abs(a - b) for a, b in zip(seen["solver"], other, strict=True)) > 1e-2


def test_a_step_on_one_role_is_served_at_its_next_batch_and_the_other_stays(served):
    adapters, tok, policies, workdir = served
    prompt = tok("Berlin is the capital of")["input_ids"]
    before = {role: policies[role].lora_request() for role in ROLES}
    versions = dict(adapters.versions)
    adapters.activate("solver")
    trainable = [p for p in adapters.model.parameters() if p.requires_grad]
    optimizer = torch.optim.SGD(trainable, lr=5.0)
    loss = adapters.model(torch.tensor([prompt])).logits[0, -1].log_softmax(-1)[tok.eos_token_id or 0]
    loss.backward()
    optimizer.step()
    assert adapters.versions == {"solver": versions["solver"] + 1, "proposer": versions["proposer"]}
    assert policies["proposer"].lora_request() is before["proposer"]
    stepped = policies["solver"].lora_request()
    assert stepped.lora_int_id != before["solver"].lora_int_id
    out = sample(policies["solver"], prompt)
    assert out.logprobs == pytest.approx(peft_logprobs(adapters, "solver", prompt, out.token_ids), abs=2e-3)
    assert sorted(p.name for p in workdir.iterdir()) == [
        f"proposer-v{versions['proposer']}",
        f"solver-v{versions['solver'] + 1}",
    ]


def test_training_through_a_given_policy_refuses_the_trainer_s_own_engine(served):
    """train(policy=...) samples from that policy: a trainer's vLLM engine beside it is refused, naming the fix."""
    from workbench.errors import ConfigError
    from workbench.train import TrainConfig
    from workbench.train.run import train

    adapters, tok, policies, _ = served
    config = TrainConfig(output_dir="unused", use_vllm=True, num_generations=2, per_device_train_batch_size=2)
    with pytest.raises(ConfigError, match="use_vllm=False"):
        train(
            config,
            tasks=[Task(id="t", question="q", golden_answers=["a"])] * 2,
            model=adapters.model,
            tokenizer=tok,
            policy=policies["solver"],
        )

"""The loss side of `WorkbenchGRPOTrainer` against TRL's own: with no correction, its loss and gradients equal
TRL 1.16's `GRPOTrainer._compute_loss` on the same inputs; what it changes in TRL's state for one call
(`trl_attributes`) is back as it was afterwards, also when the loss raises."""

from __future__ import annotations

import pytest
import torch
from test_trainer import make

from workbench.train.trainer_loss import trl_attributes

pytestmark = pytest.mark.slow

SETTINGS = ("epsilon_low", "epsilon_high", "use_vllm", "vllm_importance_sampling_correction")


def fixed_inputs(completion_width: int = 4) -> dict[str, torch.Tensor]:
    """Two rows of prompt and completion ids, an observation token and completion padding masked out,
    old logprobs apart from the current ones (so the clip acts), per-row advantages."""
    gen = torch.Generator().manual_seed(0)
    prompt = torch.randint(3, 300, (2, 3), generator=gen)
    completion = torch.randint(3, 300, (2, completion_width), generator=gen)
    mask = torch.tensor([[1, 1, 1, 0], [1, 0, 1, 1]])
    return {
        "prompt_ids": prompt,
        "prompt_mask": torch.ones_like(prompt),
        "completion_ids": completion,
        "completion_mask": torch.ones_like(completion),
        "tool_mask": mask,
        "advantages": torch.tensor([1.5, -0.7]),
        "num_items_in_batch": mask.sum(),
    }


def loss_and_grads(trainer, inputs) -> tuple[float, dict[str, torch.Tensor]]:
    model = trainer.model.train()
    trainer.current_gradient_accumulation_steps = 1  # set by Trainer.train() otherwise
    model.zero_grad()
    loss = trainer._compute_loss(model, inputs)
    loss.backward()
    return loss.item(), {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}


def test_trl_attributes_sets_for_one_call_and_restores_however_it_ends():
    class Trainer:
        def method(self):
            return "class"

    trainer = Trainer()
    trainer.epsilon_high = 0.2
    with trl_attributes(trainer, epsilon_high=0.5, method=lambda: "instance"):
        assert (trainer.epsilon_high, trainer.method()) == (0.5, "instance")
    assert (trainer.epsilon_high, trainer.method()) == (0.2, "class")
    assert "method" not in vars(trainer)
    with pytest.raises(RuntimeError, match="inside"), trl_attributes(trainer, epsilon_high=0.9, method=None):
        raise RuntimeError("inside")
    assert (trainer.epsilon_high, trainer.method()) == (0.2, "class")
    assert "method" not in vars(trainer)


@pytest.mark.parametrize("beta", [0.0, 0.04])
def test_the_loss_equals_trls_own_with_the_correction_off(tmp_path, tiny_model_dir, tasks, retriever, beta):
    """A WorkbenchGRPOTrainer (chunked logprob head, the loss hooks) and a plain TRL GRPOTrainer built from the
    same weights and GRPOConfig give the same loss and gradients on fixed inputs (with the KL term too)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import GRPOTrainer

    from workbench.train.rows import tasks_dataset, workbench_reward

    def fresh():
        return AutoModelForCausalLM.from_pretrained(tiny_model_dir), AutoTokenizer.from_pretrained(tiny_model_dir)

    ours = make(tmp_path / "ours", fresh(), tasks, retriever, beta=beta)
    assert ours.prox_correction is None and ours.wb_config.logprob_chunk  # the correction off, the chunked head on
    model, tok = fresh()
    trl = GRPOTrainer(
        model=model,
        reward_funcs=[workbench_reward],
        args=ours.wb_config.to_grpo_config(),
        train_dataset=tasks_dataset(tasks),
        processing_class=tok,
    )
    inputs = fixed_inputs()
    ids = torch.cat([inputs["prompt_ids"], inputs["completion_ids"]], 1)
    with torch.no_grad():
        logp, _, _ = trl._get_per_token_logps_and_entropies(model, ids, torch.ones_like(ids), 4)
    inputs["old_per_token_logps"] = logp + torch.tensor([[0.1, -0.3, 0.0, 0.25], [-0.1, 0.0, 0.3, -0.2]])
    if beta:
        inputs["ref_per_token_logps"] = logp - 0.2
    ours_loss, ours_grads = loss_and_grads(ours, dict(inputs))
    trl_loss, trl_grads = loss_and_grads(trl, dict(inputs))
    assert ours_loss == pytest.approx(trl_loss, abs=1e-6) and ours_loss != 0.0
    assert ours_grads.keys() == trl_grads.keys()
    for name, grad in trl_grads.items():
        torch.testing.assert_close(ours_grads[name], grad, atol=1e-6, rtol=1e-5)


def test_the_loss_restores_trls_attributes_also_when_it_raises(tmp_path, tiny, tasks, retriever):
    """Overlapped training (loglinear π_prox) with adpo's per-row clips: inside the loss TRL's clips are
    tensors, its vLLM importance-sampling path is on and its logprob pass is rebound; after the loss, and
    after a loss that raised, each is as before."""
    trainer = make(tmp_path, tiny, tasks, retriever, async_rollouts=True, prox="loglinear")
    assert trainer.prox_correction is trainer.overlapped is not None
    with pytest.warns(DeprecationWarning, match="async_training is now .overlapped"):
        assert trainer.async_training is trainer.overlapped
    before = {name: getattr(trainer, name) for name in SETTINGS}
    inputs = fixed_inputs()
    inputs.update(
        eps_high=torch.tensor([0.3, 0.4]),
        sampling_per_token_logps=torch.full((2, 4), -3.0),
        behaviour_versions=torch.zeros(2, 4, dtype=torch.long),
        importance_sampling_ratio=torch.ones(2, 4),
    )
    seen = []

    def look(inputs, logp):
        seen.append({name: getattr(trainer, name) for name in SETTINGS})
        seen[-1]["rebound"] = "_get_per_token_logps_and_entropies" in vars(trainer)
        if len(seen) == 2:
            raise RuntimeError("the correction failed")
        approximate(inputs, logp)

    approximate = trainer.overlapped.approximate_prox
    trainer.overlapped.approximate_prox = look
    loss, _ = loss_and_grads(trainer, dict(inputs))
    assert torch.isfinite(torch.tensor(loss))
    after_ok = {name: getattr(trainer, name) for name in SETTINGS}
    with pytest.raises(RuntimeError, match="the correction failed"):
        loss_and_grads(trainer, dict(inputs))
    for inside in seen:
        assert inside["rebound"] and inside["use_vllm"] and inside["vllm_importance_sampling_correction"]
        assert torch.equal(inside["epsilon_high"], torch.tensor([[0.3], [0.4]]))
        assert torch.is_tensor(inside["epsilon_low"])
    assert after_ok == before
    assert {name: getattr(trainer, name) for name in SETTINGS} == before
    assert "_get_per_token_logps_and_entropies" not in vars(trainer)

"""One real GRPO step on a harness's rollouts: `HarnessEpisodes` as the trainer's episode runner, the
harness an `openai` client loop, the policy the trainer's live tiny model behind the gateway."""

from __future__ import annotations

import pytest
import torch

from workbench.gateway import HarnessEpisodes
from workbench.trajectory import Task, Trajectory


def spread_reward(traj: Trajectory) -> dict[str, float]:
    """Rewards that differ between rollouts: the share of distinct tokens the model sampled."""
    ids = [t for s in traj.steps for t in s.completion_ids]
    return {"total": len(set(ids)) / max(len(ids), 1)}


async def agent(r) -> str:
    messages = [{"role": "user", "content": r.task.question}]
    first = await r.client.chat.completions.create(model="tiny", messages=messages, max_tokens=12)
    messages += [first.choices[0].message.model_dump(exclude_none=True), {"role": "user", "content": "Again."}]
    second = await r.client.chat.completions.create(model="tiny", messages=messages, max_tokens=12)
    return second.choices[0].message.content


@pytest.mark.slow
def test_a_grpo_step_trains_on_a_harness_s_rollouts(tmp_path):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from workbench.models import build_tiny_model, sample_texts
    from workbench.train.config import TrainConfig
    from workbench.train.trainer import WorkbenchGRPOTrainer

    path = build_tiny_model(tmp_path / "tiny", sample_texts(), vocab_size=400, seed=0)
    torch.manual_seed(0)
    cfg = TrainConfig(
        output_dir=str(tmp_path / "run"),
        num_generations=2,
        per_device_train_batch_size=4,
        max_steps=1,
        learning_rate=1e-2,
        max_completion_length=96,
    )
    model, tok = AutoModelForCausalLM.from_pretrained(path), AutoTokenizer.from_pretrained(path)
    before = {k: v.detach().clone() for k, v in model.named_parameters()}
    runner = HarnessEpisodes(agent)
    tasks = [Task(f"t{i}", f"Question {i}?") for i in range(4)]
    try:
        trainer = WorkbenchGRPOTrainer(model, tok, tasks, episodes=runner, config=cfg, reward=spread_reward)
        result = trainer.train()
    finally:
        runner.close()
    assert trainer.state.global_step == 1 and torch.isfinite(torch.tensor(result.training_loss))
    assert any(not torch.equal(before[k], v) for k, v in model.named_parameters())

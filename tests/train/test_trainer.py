"""Real TRL training steps on a tiny local model: masks, estimators, dynamic sampling, checkpoints."""

from __future__ import annotations

import pytest
import torch

from workbench.errors import ConfigError
from workbench.store import Store
from workbench.train.config import TrainConfig
from workbench.train.episodes import SearchR1Episodes
from workbench.trajectory import Trajectory

pytestmark = pytest.mark.slow


def spread_reward(traj: Trajectory) -> dict[str, float]:
    """A reward that differs between rollouts: the share of distinct tokens in the first turn."""
    ids = traj.steps[0].completion_ids if traj.steps else []
    share = len(set(ids)) / max(len(ids), 1)
    return {"total": share, "diversity": share}


def make(tmp_path, tiny, tasks, retriever, reward=spread_reward, store=None, **kw):
    from workbench.train.trainer import WorkbenchGRPOTrainer

    model, tok = tiny
    torch.manual_seed(1234)  # sampling draws from the global RNG: make it independent of test order
    base = dict(
        output_dir=str(tmp_path / "out"),
        num_generations=2,
        per_device_train_batch_size=4,
        max_steps=2,
        learning_rate=1e-3,
        max_completion_length=96,
        max_turns=2,
        max_turn_tokens=16,
    )
    cfg = TrainConfig(**{**base, **kw})
    runner = SearchR1Episodes(
        retriever,
        max_turns=cfg.max_turns,
        max_turn_tokens=cfg.max_turn_tokens,
        max_total_tokens=cfg.max_completion_length,
    )
    return WorkbenchGRPOTrainer(model, tok, tasks, episodes=runner, config=cfg, reward=reward, store=store)


def snapshot(model) -> dict[str, torch.Tensor]:
    return {k: v.detach().clone() for k, v in model.named_parameters()}


def changed(before, model) -> bool:
    return any(not torch.equal(before[k], v) for k, v in model.named_parameters())


@pytest.mark.parametrize("estimator", ["grpo", "hrpo", "reinforce_pp", "adpo", "asearcher", "reinforce"])
def test_training_steps_change_weights(tmp_path, tiny, tasks, retriever, estimator):
    for i, t in enumerate(tasks):
        t.metadata["self_consistency"] = 0.3 + 0.1 * i
    trainer = make(tmp_path, tiny, tasks, retriever, estimator=estimator)
    before = snapshot(trainer.model)
    result = trainer.train()
    assert trainer.state.global_step == 2
    assert torch.isfinite(torch.tensor(result.training_loss))
    assert changed(before, trainer.model)
    logs = {k for row in trainer.state.log_history for k in row}
    assert {"reward", "entropy", "episode/steps", "reward/diversity"} <= logs
    assert any(k.startswith("pass_rate/hop_") for k in logs)
    # every sample came from a real episode with token ids and an env mask
    assert all(t.steps and t.rewards.get("total") is not None for t in trainer.last_trajectories)
    # the rollouts keep the model's raw logprobs beside the processed ones, one per sampled token
    steps = [s for t in trainer.last_trajectories for s in t.steps]
    assert all(s.raw_logprobs is not None and len(s.raw_logprobs) == len(s.completion_ids) for s in steps)


def test_env_mask_keeps_observation_tokens_out_of_the_loss(tmp_path, tiny, tasks, retriever):
    trainer = make(tmp_path, tiny, tasks, retriever)
    model = trainer.model
    P, C = 5, 8
    env = torch.tensor([[1, 1, 0, 0, 0, 1, 1, 1], [1, 0, 0, 1, 1, 1, 0, 1]])
    inputs = {
        "prompt_ids": torch.randint(3, 300, (2, P)),
        "prompt_mask": torch.ones(2, P, dtype=torch.long),
        "completion_ids": torch.randint(3, 300, (2, C)),
        "completion_mask": torch.ones(2, C, dtype=torch.long),
        "tool_mask": env,
        "advantages": torch.tensor([1.0, -1.0]),
        "num_items_in_batch": env.sum(),
    }
    captured = {}

    def keep(_module, _inp, out):
        out.retain_grad()
        captured["h"] = out

    trainer.current_gradient_accumulation_steps = 1  # set by Trainer.train() otherwise
    handle = model.model.norm.register_forward_hook(keep)
    try:
        model.train()
        loss = trainer._compute_loss(model, inputs)
        loss.backward()
    finally:
        handle.remove()
    grad = captured["h"].grad.abs().sum(-1)  # (B, P+C): position t predicts token t+1
    predicts = grad[:, P - 1 : P - 1 + C]
    assert torch.all(predicts[env == 0] == 0)
    assert torch.all(predicts[env == 1] > 0)


def test_dynamic_sampling_refills_flat_groups(tmp_path, tiny, tasks, retriever):
    def reward(traj: Trajectory) -> dict[str, float]:
        if traj.task.id in ("t0", "t1", "t2", "t3"):
            return {"total": 0.0}  # every rollout of these questions scores the same
        return spread_reward(traj)

    store = Store(tmp_path / "run", synchronous="NORMAL")
    trainer = make(
        tmp_path,
        tiny,
        tasks,
        retriever,
        reward=reward,
        store=store,
        dynamic_sampling=True,
        max_refill_rounds=3,
        max_steps=1,
        seed=3,
    )
    trainer.train()
    # the step's records: advantages of the trained batch, and the groups that were replaced
    events = store.events()
    [adv] = events[events.kind == "advantages"].payload
    assert adv["step"] == 0 and adv["trajectories"] == [t.id for t in trainer.last_trajectories]
    assert adv["estimator"] == "grpo" and len(adv["advantages"]) == 4 and not adv["per_turn"]
    dropped = [g for p in events[events.kind == "dropped_groups"].payload for g in p["groups"]]
    assert dropped and all(len(set(g["rewards"])) == 1 for g in dropped)  # only flat groups are replaced
    assert not set(adv["trajectories"]) & {i for g in dropped for i in g["trajectories"]}
    store.close()
    refilled = [
        row["dynamic_sampling/refill_prompts"]
        for row in trainer.state.log_history
        if "dynamic_sampling/refill_prompts" in row
    ]
    assert refilled and refilled[0] >= 1
    # refills count prompts, not optimizer steps
    assert trainer.state.global_step == 1
    ids = [t.task.id for t in trainer.last_trajectories]
    assert len(ids) == 4


def test_checkpoint_and_resume(tmp_path, tiny, tasks, retriever):
    trainer = make(tmp_path, tiny, tasks, retriever, save_steps=1, max_steps=1)
    trainer.train()
    ckpt = tmp_path / "out" / "checkpoint-1"
    assert (ckpt / "trainer_state.json").exists()
    again = make(tmp_path, tiny, tasks, retriever, save_steps=1, max_steps=2)
    again.train(resume_from_checkpoint=str(ckpt))
    assert again.state.global_step == 2


def test_too_few_tasks_is_a_clear_error(tmp_path, tiny, tasks, retriever):
    with pytest.raises(ConfigError, match="distinct tasks"):
        make(tmp_path, tiny, tasks[:2], retriever, estimator="hrpo")
    with pytest.raises(ConfigError, match="dynamic_sampling"):
        make(tmp_path, tiny, tasks, retriever, estimator="hrpo", dynamic_sampling=True)

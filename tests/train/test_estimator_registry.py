"""The estimator registry: a toy estimator registered here alone trains a real TRL step; parameters
are typed, checked and reachable by their old flat names."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
import torch

from workbench.errors import ConfigError
from workbench.train.config import TrainConfig
from workbench.train.estimators import (
    Advantages,
    Batch,
    Estimator,
    estimator,
    estimator_class,
    estimator_names,
    param,
)
from workbench.trajectory import Task, Trajectory


@estimator("toy_rank")
@dataclass(frozen=True)
class ToyRank(Estimator):
    """Trajectory i of the batch gets step·(i + 1); the first trajectory leaves the loss."""

    step: float = param(1.0, "advantage increment from one trajectory to the next")

    def validate(self) -> None:
        if self.step <= 0:
            raise self.bad("step", "must be > 0")

    def advantages(self, batch: Batch) -> Advantages:
        n = len(batch.trajectories)
        keep = torch.ones(n, dtype=torch.bool)
        keep[0] = False
        return Advantages(self.step * torch.arange(1, n + 1, dtype=torch.float32), keep=keep)


def test_a_registered_estimator_is_named_built_and_checked_like_the_built_ins():
    assert "toy_rank" in estimator_names() and estimator_class("toy_rank") is ToyRank
    cfg = TrainConfig(estimator="toy_rank", estimator_params={"toy_rank": {"step": 2}})
    toy = cfg.make_estimator()
    assert isinstance(toy, ToyRank) and toy.step == 2.0 and isinstance(toy.step, float)  # an int is a float
    batch = Batch([Trajectory(task=Task(id=str(i), question="q")) for i in range(3)], group_size=3)
    assert toy.advantages(batch).values.tolist() == [2.0, 4.0, 6.0]
    with pytest.raises(
        ConfigError, match=r"estimator_params\.toy_rank: unknown parameter\(s\) stp; toy_rank takes step"
    ):
        TrainConfig(estimator="toy_rank", estimator_params={"toy_rank": {"stp": 1.0}})
    with pytest.raises(ConfigError, match=r"estimator_params\.toy_rank\.step: 'big' is not a float"):
        TrainConfig(estimator="toy_rank", estimator_params={"toy_rank": {"step": "big"}})
    with pytest.raises(ConfigError, match=r"estimator_params\.toy_rank\.step: must be > 0"):
        TrainConfig(estimator_params={"toy_rank": {"step": -1.0}})  # every estimator's parameters are checked


def test_registration_errors_name_the_fix():
    with pytest.raises(ConfigError, match="already registered by ToyRank"):

        @estimator("toy_rank")
        @dataclass(frozen=True)
        class Other(Estimator):
            def advantages(self, batch: Batch) -> Advantages:
                raise AssertionError

    with pytest.raises(ConfigError, match=r"@dataclass\(frozen=True\) under @estimator"):

        @estimator("toy_plain")
        class Plain(Estimator):
            def advantages(self, batch: Batch) -> Advantages:
                raise AssertionError

    with pytest.raises(ConfigError, match="not a registered estimator"):
        TrainConfig(estimator="ppo")
    with pytest.raises(ConfigError, match=r"estimator_params \(keyed by estimator name\): 'min_scale'"):
        TrainConfig(estimator="adpo", estimator_params={"min_scale": 0.5})


def test_flat_parameter_names_still_set_the_estimators_parameters(tmp_path):
    cfg = TrainConfig(estimator="adpo", adpo_min_scale=0.5, asearcher_adv_norm=False, gamma=0.9)
    assert cfg.estimator_params == {
        "adpo": {"min_scale": 0.5},
        "asearcher": {"adv_norm": False},
        "reinforce_pp": {"gamma": 0.9},
    }
    assert (cfg.adpo_min_scale, cfg.adpo_p_low, cfg.gamma) == (0.5, 0.3, 0.9)  # set, default, set
    assert cfg.make_estimator().min_scale == 0.5 and cfg.make_estimator("asearcher").adv_norm is False
    # a flat name wins over the table it lands in; switching estimator keeps the others' parameters
    assert cfg.replace(adpo_min_scale=0.7).adpo_min_scale == 0.7
    assert cfg.replace(estimator="grpo").replace(estimator="adpo").make_estimator().min_scale == 0.5
    flat = tmp_path / "flat.toml"
    flat.write_text('[train]\nestimator = "asearcher"\nasearcher_reward_bias = -0.25\n')
    nested = tmp_path / "nested.toml"
    nested.write_text('[train]\nestimator = "asearcher"\n[train.estimator_params.asearcher]\nreward_bias = -0.25\n')
    assert TrainConfig.load(flat).to_dict() == TrainConfig.load(nested).to_dict()
    assert TrainConfig.load(nested).make_estimator().reward_bias == -0.25
    with pytest.raises(ConfigError, match=r"adpo\.p_low: 0\.9 must be below p_high"):
        TrainConfig(adpo_p_low=0.9)
    assert "estimator_params.adpo.min_scale" in TrainConfig.fields_help()["adpo_min_scale"]


def _reward(traj: Trajectory) -> dict[str, float]:
    return {"total": 0.5}  # flat: only the toy's advantages can move the weights


@pytest.mark.slow
def test_a_toy_estimator_trains_a_real_step_and_its_advantages_reach_the_loss(tmp_path, tiny, tasks, retriever):
    """One step, 2 questions × 2 rollouts = 4 trajectories, one row each, step 0.5: advantages
    (0.5, 1.0, 1.5, 2.0), the first row out of the loss (keep False: its loss tokens n_0 become 0).
    On the first (on-policy) step the ratio is exactly 1, so with beta 0 TRL's dapo loss is
    -Σ_r A_r·n_r / N, N the loss tokens of the batch: -(1.0·n_1 + 1.5·n_2 + 2.0·n_3) / (n_1 + n_2 + n_3)."""
    from workbench.train.episodes import SearchR1Episodes
    from workbench.train.trainer import WorkbenchGRPOTrainer

    model, tok = tiny
    torch.manual_seed(1234)
    cfg = TrainConfig(
        estimator="toy_rank",
        estimator_params={"toy_rank": {"step": 0.5}},
        output_dir=str(tmp_path / "out"),
        num_generations=2,
        per_device_train_batch_size=4,
        max_steps=1,
        learning_rate=1e-3,
        max_completion_length=64,
        max_turns=1,
        max_turn_tokens=16,
    )
    runner = SearchR1Episodes(retriever, max_turns=1, max_turn_tokens=16, max_total_tokens=64)
    trainer = WorkbenchGRPOTrainer(model, tok, tasks, episodes=runner, config=cfg, reward=_reward)
    seen: list[dict[str, torch.Tensor]] = []
    compute_loss = trainer._compute_loss

    def spy(model, inputs):
        loss = compute_loss(model, inputs)
        mask = inputs["completion_mask"] * inputs["tool_mask"]
        seen.append(
            {"adv": inputs["advantages"], "n": mask.sum(1), "N": inputs["num_items_in_batch"], "loss": loss.detach()}
        )
        return loss

    trainer._compute_loss = spy
    before = {k: v.detach().clone() for k, v in model.named_parameters()}
    trainer.train()

    assert trainer.state.global_step == 1 and len(trainer.last_trajectories) == 4
    [got] = seen
    order = torch.argsort(got["adv"])  # TRL shuffles the rows of a generation batch
    adv, n = got["adv"][order], got["n"][order]
    assert adv.tolist() == [0.5, 1.0, 1.5, 2.0]
    assert n[0] == 0 and bool((n[1:] > 0).all())  # the dropped trajectory's tokens left the loss
    assert int(got["N"]) == int(n.sum())
    assert float(got["loss"]) == pytest.approx(float(-(adv * n).sum() / n.sum()), rel=1e-5)
    assert any(not torch.equal(before[k], v) for k, v in model.named_parameters())
    assert [row["toy_rank/kept_rows"] for row in trainer.state.log_history if "toy_rank/kept_rows" in row] == [0.75]

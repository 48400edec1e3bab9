"""`WorkbenchGRPOTrainer`: TRL 1.16's `GRPOTrainer` driven by workbench episodes.

    trainer = WorkbenchGRPOTrainer(model, tokenizer, tasks, episodes=SearchR1Episodes(retriever),
                                   config=TrainConfig(estimator="hrpo", max_steps=3))
    trainer.train()

How it plugs into TRL (see the TRL 1.16 notes in the design docs):
- `rollout_func` runs the episode runner (`async (tasks, policy) -> [Trajectory]`) with the live model
  wrapped as a policy, scores each trajectory with the reward spec, and returns `prompt_ids`,
  `completion_ids`, `logprobs`, `env_mask` plus extra fields (task id, hops, reward components,
  turn of each token) that reach the reward function. Observation tokens are attended to, never
  trained on (`env_mask` → TRL's `tool_mask`).
- Advantages per estimator, after TRL's own pass in `_generate_and_score_completions`:
  grpo keeps TRL's group normalisation; hrpo samples one rollout per distinct question and
  normalises per hop count over the global batch; reinforce_pp puts whitened discounted per-turn
  returns on each turn's tokens ((B, T) advantages); adpo scales by s(p) and sets a per-sample
  upper clip used in `_compute_loss`.
- These are private TRL methods, so the TRL version is pinned and checked.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections import Counter
from typing import Any, Awaitable, Callable, Sequence

import torch

from workbench.errors import ConfigError, TrainingError
from workbench.train import advantages as A
from workbench.train.config import TrainConfig
from workbench.train.policy import live_policy, run_sync
from workbench.train.rewards import resolve_reward, score_trajectory
from workbench.train.rollout import (dynamic_sampling, pass_rate_by_hop, self_consistency, step_rewards,
                                     task_drawer, trajectory_sample)
from workbench.trajectory import Task, Trajectory

REQUIRED_TRL = "1.16.0"
EpisodeRunner = Callable[[list[Task], Any], Awaitable[list[Trajectory]]]


def check_trl_version() -> None:
    import trl

    if trl.__version__ != REQUIRED_TRL:
        raise TrainingError(f"workbench.train subclasses private GRPOTrainer methods of trl=={REQUIRED_TRL}, "
                            f"but trl {trl.__version__} is installed; run `pip install trl=={REQUIRED_TRL}`")


check_trl_version()
os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")  # rollout_func is the documented multi-turn hook

from trl import GRPOTrainer  # noqa: E402
from trl.trainer.utils import RepeatSampler  # noqa: E402


def tasks_dataset(tasks: Sequence[Task]) -> Any:
    """The training dataset: the question as `prompt`, the whole task as JSON."""
    from datasets import Dataset

    return Dataset.from_list([{"prompt": t.question, "task_json": json.dumps(dataclasses.asdict(t))}
                              for t in tasks])


def workbench_reward(prompts: list, completions: list, wb_reward: list[float],
                     wb_rewards: list[dict] | None = None, log_metric: Any = None, **_: Any) -> list[float]:
    """TRL reward function: the totals the reward spec already gave each trajectory in the rollout."""
    if log_metric is not None and wb_rewards:
        for name in sorted({k for r in wb_rewards for k in r if k != "total"}):
            vals = [r[name] for r in wb_rewards if name in r]
            log_metric(f"reward/{name}", sum(vals) / len(vals))
    return [float(r) for r in wb_reward]


def _rollout_func(prompts: list, trainer: "WorkbenchGRPOTrainer") -> dict[str, list]:
    return trainer.rollout(prompts)


class WorkbenchGRPOTrainer(GRPOTrainer):
    """GRPOTrainer whose samples are whole workbench episodes; see the module docstring."""

    def __init__(self, model: Any, tokenizer: Any, tasks: Sequence[Task], *, episodes: EpisodeRunner,
                 config: TrainConfig, reward: Any = None, callbacks: list | None = None, store: Any = None,
                 policy_factory: Callable[["WorkbenchGRPOTrainer"], Any] | None = None) -> None:
        check_trl_version()
        tasks = list(tasks)
        per_batch = config.per_device_train_batch_size * config.gradient_accumulation_steps
        need = per_batch if config.estimator == "hrpo" else per_batch // config.num_generations
        if len(tasks) < need:
            raise ConfigError(f"{len(tasks)} tasks cannot fill one batch: {config.estimator} needs at least {need} "
                              "distinct tasks; add tasks or lower per_device_train_batch_size")
        if config.dynamic_sampling and config.estimator == "hrpo":
            raise ConfigError("dynamic_sampling refills per-question groups; hrpo has one rollout per question. "
                              "Turn dynamic_sampling off or use grpo/adpo/reinforce_pp")
        if tokenizer.pad_token_id is None:
            tokenizer.pad_token = tokenizer.eos_token
        self.wb_config = config
        self.episodes = episodes
        self.scorer = resolve_reward(reward if reward is not None else config.reward)
        self.tasks = tasks
        self.store = store
        self.policy_factory = policy_factory
        self.last_trajectories: list[Trajectory] = []
        self._draw = task_drawer(tasks, config.seed + 1)
        self._batch_rows: list[dict] | None = None
        super().__init__(model=model, reward_funcs=[workbench_reward], args=config.to_grpo_config(),
                         train_dataset=tasks_dataset(tasks), processing_class=tokenizer,
                         rollout_func=_rollout_func, callbacks=callbacks)

    # -- rollouts ----------------------------------------------------------------------------
    def policy(self) -> Any:
        """The policy episodes sample from: the live weights (or vLLM colocated with them)."""
        if self.policy_factory is not None:
            return self.policy_factory(self)
        if self.use_vllm:
            from workbench.train.policy import VLLMTrainerPolicy

            return VLLMTrainerPolicy(self)
        return live_policy(self.accelerator.unwrap_model(self.model), self.processing_class)

    def run_episodes(self, tasks: list[Task]) -> list[Trajectory]:
        trajs = run_sync(self.episodes(tasks, self.policy()))
        if len(trajs) != len(tasks):
            raise TrainingError(f"the episode runner returned {len(trajs)} trajectories for {len(tasks)} tasks; "
                                "it must return one per task, in order")
        for t in trajs:
            score_trajectory(self.scorer, t)
            t.run_id = t.run_id or self.wb_config.run_id
            t.lineage.setdefault("train_step", self.state.global_step)
        return trajs

    def rollout(self, prompts: list) -> dict[str, list]:
        """TRL's `rollout_func`: one trajectory per prompt row, as token ids + env mask + extra fields."""
        rows = self._batch_rows
        if rows is None or len(rows) != len(prompts):
            raise TrainingError("rollout called outside a generation batch")
        tasks = [Task(**json.loads(r["task_json"])) for r in rows]
        trajs = self.run_episodes(tasks)
        metrics = self._metrics["train"]
        if self.wb_config.dynamic_sampling and self.model.training:
            report = dynamic_sampling(trajs, self.num_generations, self._draw, self.run_episodes,
                                      self.wb_config.max_refill_rounds)
            metrics["dynamic_sampling/refill_rounds"].append(report.rounds)
            metrics["dynamic_sampling/refill_prompts"].append(report.prompts_refilled)
            metrics["dynamic_sampling/zero_std_groups_left"].append(report.zero_std_groups_left)
        self.last_trajectories = trajs
        self._log_episodes(trajs)
        eos = self.processing_class.eos_token_id
        samples = [trajectory_sample(t, eos, self.args.max_completion_length) for t in trajs]
        out: dict[str, list] = {k: [s[k] for s in samples]
                                for k in ("prompt_ids", "completion_ids", "logprobs", "env_mask", "step_index")}
        out.update(wb_reward=[float(t.reward or 0.0) for t in trajs], wb_rewards=[dict(t.rewards) for t in trajs],
                   task_id=[t.task.id for t in trajs], hops=[t.hops for t in trajs],
                   turns=[len(t.steps) for t in trajs], termination=[t.termination for t in trajs],
                   self_consistency=[self_consistency(t.task) for t in trajs],
                   step_rewards=[step_rewards(t) for t in trajs])
        return out

    def _log_episodes(self, trajs: list[Trajectory]) -> None:
        m = self._metrics["train"]
        n = max(len(trajs), 1)
        m["episode/steps"].append(sum(len(t.steps) for t in trajs) / n)
        m["episode/tool_calls"].append(sum(t.num_tool_calls for t in trajs) / n)
        for kind, count in Counter(t.termination for t in trajs).items():
            m[f"episode/end_{kind or 'unknown'}"].append(count / n)
        for name, value in pass_rate_by_hop(trajs).items():
            m[name].append(value)
        if self.store is not None:
            for t in trajs:
                self.store.write(t)

    # -- advantages --------------------------------------------------------------------------
    def _generate_and_score_completions(self, inputs: list[dict]) -> dict[str, Any]:
        self._batch_rows = inputs
        try:
            out = super()._generate_and_score_completions(inputs)
        finally:
            self._batch_rows = None
        est = self.wb_config.estimator
        if est == "grpo" or not self.model.training:
            return out
        from accelerate.utils import gather_object

        n = len(inputs)
        local = slice(self.accelerator.process_index * n, (self.accelerator.process_index + 1) * n)
        device = out["advantages"].device
        if est == "hrpo":
            rewards = gather_object([float(x["wb_reward"]) for x in inputs])
            hops = gather_object([x.get("hops") for x in inputs])
            out["advantages"] = A.hrpo(rewards, hops)[local].to(device)
        elif est == "adpo":
            c = self.wb_config
            p = [float(x["self_consistency"]) for x in inputs]
            out["advantages"] = out["advantages"] * A.adpo_scale(p, c.adpo_min_scale, c.adpo_p_low,
                                                                 c.adpo_p_high).to(device)
            out["eps_high"] = A.adpo_eps_high(p, c.epsilon, c.adpo_eps_boost, c.adpo_p_low,
                                              c.adpo_p_high).to(device)
        elif est == "reinforce_pp":
            returns = A.reinforce_pp(gather_object([x["step_rewards"] for x in inputs]), self.wb_config.gamma)
            returns = returns[local]
            adv = torch.zeros(out["completion_ids"].shape, dtype=torch.float32)
            for i, x in enumerate(inputs):
                for j, k in enumerate(x["step_index"][: adv.size(1)]):
                    if k >= 0:
                        adv[i, j] = returns[i][k]
            out["advantages"] = adv.to(device)
        return out

    def _get_train_sampler(self, dataset: Any = None) -> Any:
        if self.wb_config.estimator != "hrpo":
            return super()._get_train_sampler(dataset)
        # one rollout per distinct question: no per-prompt repetition
        return RepeatSampler(data_source=dataset if dataset is not None else self.train_dataset,
                             mini_repeat_count=1, batch_size=self.args.generation_batch_size,
                             repeat_count=self.num_iterations * self.args.steps_per_generation,
                             shuffle=self.shuffle_dataset, seed=self.args.seed)

    def _compute_loss(self, model: Any, inputs: dict[str, Any]) -> torch.Tensor:
        if "eps_high" not in inputs:
            return super()._compute_loss(model, inputs)
        low, high = self.epsilon_low, self.epsilon_high
        per_sample = inputs["eps_high"].unsqueeze(1)
        self.epsilon_high = per_sample  # both bounds must be tensors for torch.clamp
        self.epsilon_low = torch.full_like(per_sample, float(low))
        try:
            return super()._compute_loss(model, inputs)
        finally:
            self.epsilon_low, self.epsilon_high = low, high


__all__ = ["REQUIRED_TRL", "WorkbenchGRPOTrainer", "check_trl_version", "tasks_dataset", "workbench_reward"]

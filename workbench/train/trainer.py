"""`WorkbenchGRPOTrainer`: TRL 1.16's `GRPOTrainer` driven by workbench episodes.

    trainer = WorkbenchGRPOTrainer(model, tokenizer, tasks, episodes=SearchR1Episodes(retriever),
                                   config=TrainConfig(estimator="hrpo", max_steps=3))
    trainer.train()

How it plugs into TRL (see the TRL 1.16 notes in the design docs):
- `_generate_and_score_completions` first runs the episode runner (`async (tasks, policy) ->
  [Trajectory]`) with the live model wrapped as a policy and scores each trajectory with the reward
  spec (per-turn rewards too, when the spec gives them), then writes it to the store once (the
  runner returns episodes unscored and unwritten). Each trajectory becomes one training row per
  context segment (`TrainConfig.segments`); the batch is padded with fully masked filler rows to a
  size TRL can group and split. TRL's `rollout_func` then hands those rows back as `prompt_ids`,
  `completion_ids`, `logprobs`, `env_mask` plus extra fields (task id, hops, reward components, turn
  of each token). Observation tokens are attended to, never trained on (`env_mask` → `tool_mask`).
  The rows and their advantages are built in `workbench.train.rows`.
- Advantages come from the run's estimator (`workbench.train.estimators`: a registry of objects, so
  a new one needs no change here; built in: grpo, hrpo, reinforce_pp, adpo, asearcher, reinforce),
  computed per trajectory over the global batch and placed on its rows; the loss applies what the
  `Advantages` carry (a per-row upper clip, rows kept, token whitening) and the estimator's
  `group_key` picks the batch sampler.
- Curricula (a simulated search engine's noise schedule) are told the optimizer step before each
  rollout: rollouts of step i (1-based, as ZeroSearch counts) use p_i.
- `use_vllm=True`: episodes sample through vLLM (TRL's colocate path; on one process the engine is
  shared across trainers, on vLLM's CPU build too), the weights are synced into it after every
  optimizer step, and the behaviour-vs-trainer logprob gap over model tokens is logged each step
  (`sampling/logp_gap/mean|max`); TRL's IS correction is `vllm_importance_sampling_correction`.
  See `workbench.train.vllm_rollout` for which path runs where.
- LoRA (`TrainConfig.lora_r > 0`, `workbench.train.lora`): TRL wraps the model with peft; the KL
  reference is the adapter disabled; with vLLM, each sync merges the adapter into the base weights,
  loads the merged weights into the engine and unmerges (vLLM never holds an adapter).
- Beside this module: the loss side (adpo's clips, decoupled PPO's weights, the logprob gap, the chunked
  head), `trainer_loss`; what construction checks and installs, `trainer_setup`; with `async_rollouts`,
  `overlap`, which sees this trainer as its `OverlapHost` and which the loss sees as its `ProxCorrection`.
- These are private TRL methods, so the TRL version is pinned and checked (on import and on construction).
"""

from __future__ import annotations

import json
import logging
import math
import os
import warnings
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

import torch
from transformers import TrainerCallback
from trl import GRPOTrainer

from workbench.contracts import Curriculum, EpisodeRunner, TrajectoryStore
from workbench.errors import TrainingError
from workbench.train import step_records
from workbench.train.config import TrainConfig
from workbench.train.estimators import Batch
from workbench.train.heap import fix_mmap_threshold
from workbench.train.lora import lora_config, save_adapter_settings
from workbench.train.overlap import OverlappedTraining, check_one_update_per_batch, colocated_engine
from workbench.train.policy import live_policy, run_sync
from workbench.train.processes import process_rank, world_size
from workbench.train.rewards import resolve_reward, score_trajectory
from workbench.train.rollout import dynamic_sampling, pass_rate_by_hop, task_drawer
from workbench.train.rows import TrainingRows, row_advantages, tasks_dataset, workbench_reward
from workbench.train.trainer_loss import LossTrainer, place_advantages
from workbench.train.trainer_setup import (
    REQUIRED_TRL,
    AdapterSettingsOnSave,
    OwnRowsFilter,
    PublishAfterStep,
    SyncAfterStep,
    check_batches,
    check_trl_version,
    group_sampler,
    known,
    place_tensorboard_logs,
    prepare_vllm,
)
from workbench.trajectory import Task, Trajectory

if TYPE_CHECKING:
    from trl import GRPOConfig

    from workbench.policies.base import Policy
    from workbench.policies.vllm_colocated import ColocatedVLLMPolicy

TASK_DRAW_SEED_OFFSET = 1
"""Refill tasks are drawn with seed + 1: apart from TRL's own sampler and init (seeded with seed)."""
RANK_SEED_STRIDE = 1_000_003
"""Each rank of a several-process run draws its refills with seed + 1 + rank * this: different tasks per rank."""


check_trl_version()  # on import too: the private methods below are those of the pinned TRL


def _rollout_func(prompts: list[str], trainer: GRPOTrainer) -> dict[str, Any]:
    if not isinstance(trainer, WorkbenchGRPOTrainer):
        raise TrainingError("workbench's rollout_func runs inside WorkbenchGRPOTrainer only")
    return trainer.rollout(prompts)


class WorkbenchGRPOTrainer(LossTrainer):
    """GRPOTrainer whose samples are whole workbench episodes; see the module docstring."""

    args: GRPOConfig  # what GRPOTrainer is built with (transformers types it as TrainingArguments)

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        tasks: Sequence[Task],
        *,
        episodes: EpisodeRunner[Policy],
        config: TrainConfig,
        reward: Any = None,
        callbacks: list[TrainerCallback] | None = None,
        store: TrajectoryStore | None = None,
        policy_factory: Callable[[WorkbenchGRPOTrainer], Policy] | None = None,
        curricula: Sequence[Curriculum] = (),
    ) -> None:
        check_trl_version()
        os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")  # rollout_func is the documented multi-turn hook
        tasks = list(tasks)
        estimator = config.make_estimator()
        per_batch = config.per_device_train_batch_size * config.gradient_accumulation_steps
        check_batches(tasks, config, estimator, per_batch)
        if tokenizer.pad_token_id is None:
            tokenizer.pad_token = tokenizer.eos_token
        self.wb_config = config
        self.estimator = estimator
        self.episodes = episodes
        self.scorer = resolve_reward(reward if reward is not None else config.reward)
        self.tasks = tasks
        from workbench.agent.recorder import Recorder

        self.store = store if process_rank() == 0 else None  # rank 0 writes every rank's episodes
        self.recorder = Recorder(self.store)
        self.policy_factory = policy_factory
        self.last_trajectories: list[Trajectory] = []
        self._draw = task_drawer(tasks, config.seed + TASK_DRAW_SEED_OFFSET + RANK_SEED_STRIDE * process_rank())
        self._pending: dict[str, list[Any]] | None = None
        self.curricula = [*curricula, *getattr(episodes, "curricula", ())]  # set_training_step(i) each step
        logging.getLogger("trl.trainer.grpo_trainer").addFilter(OwnRowsFilter())
        args = config.to_grpo_config()
        shared = config.use_vllm and config.vllm_mode == "colocate" and world_size() == 1
        if config.use_vllm:
            prepare_vllm(model, config)
        if shared:
            args.use_vllm = False  # the engine is the process's shared one, built below, not TRL's own
        self._colocated_policy: ColocatedVLLMPolicy | None = None
        fix_mmap_threshold(config.heap_mmap_threshold_mib)
        super().__init__(
            model=model,
            reward_funcs=[workbench_reward],
            args=args,
            train_dataset=tasks_dataset(tasks),
            processing_class=tokenizer,
            rollout_func=_rollout_func,
            callbacks=callbacks,
            peft_config=lora_config(config),  # TRL wraps the model; the reference is the adapter disabled
        )
        self._install_chunked_head(config.logprob_chunk)
        if shared:
            self._share_vllm_engine(args)
        self._add_own_callbacks()
        self.prox_correction = self.overlapped = self._overlapped_training() if config.async_rollouts else None

    def _add_own_callbacks(self) -> None:
        """vLLM's sync after each step (overlapped runs load at turn boundaries), LoRA's settings, TensorBoard's dir."""
        if self.use_vllm and not self.wb_config.async_rollouts:
            self.add_callback(SyncAfterStep(self.sync_vllm_weights))
        if self.wb_config.lora_r:
            self.add_callback(AdapterSettingsOnSave(lambda checkpoint: save_adapter_settings(self.model, checkpoint)))
        place_tensorboard_logs(self.callback_handler.callbacks, str(self.args.output_dir))

    def _overlapped_training(self) -> OverlappedTraining:
        """`async_rollouts`: the producer and rollout copy, and the weights published after each step."""
        args, accelerator = self.args, self.accelerator
        check_one_update_per_batch(self.num_iterations, args.steps_per_generation, args.gradient_accumulation_steps)
        overlapped = OverlappedTraining(
            self,
            rows_per_step=int(args.generation_batch_size or 0),
            group_size=int(self.num_generations or 1),
            ranks=accelerator.num_processes,
            rank=accelerator.process_index,
            engine=colocated_engine(self.vllm_generation) if self.use_vllm else None,
            finish=self._score,
        )
        self.add_callback(PublishAfterStep(overlapped.publish))
        return overlapped

    @property
    def async_training(self) -> OverlappedTraining | None:
        """Deprecated: `overlapped`."""
        warnings.warn("WorkbenchGRPOTrainer.async_training is now .overlapped", DeprecationWarning, stacklevel=2)
        return self.overlapped

    def _share_vllm_engine(self, args: GRPOConfig) -> None:
        """Generate with the process's shared colocated engine instead of TRL's own."""
        from workbench.train.vllm_rollout import shared_generation

        args.use_vllm = self.use_vllm = True
        self.vllm_generation = shared_generation(self, args)
        self._last_loaded_step = -1

    def train(self, *args: Any, **kwargs: Any) -> Any:
        """TRL's `train`; an overlapped run's producer stops with it however it ends (freeing its kernels)."""
        try:
            return super().train(*args, **kwargs)
        finally:
            if self.overlapped is not None:
                self.overlapped.close()

    def sync_vllm_weights(self) -> None:
        """Load the trained weights into vLLM (TRL's `sync_weights`); called after every optimizer step."""
        self.vllm_generation.sync_weights()  # type: ignore[no-untyped-call]  # TRL's method is unannotated
        self._last_loaded_step = self.state.global_step

    # -- rollouts ----------------------------------------------------------------------------
    def policy(self) -> Policy:
        """The policy episodes sample from: the live weights, or vLLM synced with them."""
        if self.policy_factory is not None:
            return self.policy_factory(self)
        if self.use_vllm:
            if getattr(self.vllm_generation, "llm", None) is None:  # server mode
                from workbench.policies.vllm_trainer import VLLMTrainerPolicy

                return VLLMTrainerPolicy(self)
            self._colocated_policy = self._colocated_policy or colocated_engine(self.vllm_generation)
            return self._colocated_policy
        return live_policy(self.accelerator.unwrap_model(self.model), self.processing_class)

    def live_model(self) -> torch.nn.Module:
        """The model being trained, unwrapped from its accelerator wrapper."""
        return self.accelerator.unwrap_model(self.model)  # type: ignore[no-any-return]  # accelerate types it Any

    def sampling_policy(self, model: torch.nn.Module, seed: int) -> Policy:
        """A policy sampling from `model` (an overlapped run's rollout copy) with `seed`."""
        return live_policy(model, self.processing_class, seed)

    def task_order(self) -> Iterator[Task]:
        """The training tasks in this trainer's sampler's order, epoch after epoch (each pass a new epoch's)."""
        rows = self.train_dataset["task_json"]  # type: ignore[index]
        sampler = self._get_train_sampler(self.train_dataset)
        while True:
            for index in sampler:
                yield Task(**json.loads(rows[index]))

    @property
    def policy_version(self) -> int:
        """The version of the weights this trainer holds: optimizer steps done."""
        return int(self.state.global_step)

    def log_metric(self, name: str, value: float) -> None:
        """Add `value` to this step's training metric `name` (TRL averages and logs them)."""
        self._metrics["train"][name].append(value)

    def run_episodes(self, tasks: list[Task]) -> list[Trajectory]:
        trajs = run_sync(self.episodes(tasks, self.policy()))
        if len(trajs) != len(tasks):
            raise TrainingError(
                f"the episode runner returned {len(trajs)} trajectories for {len(tasks)} tasks; "
                "it must return one per task, in order"
            )
        for t in trajs:
            self._score(t)
        return trajs

    def _score(self, t: Trajectory) -> None:
        score_trajectory(self.scorer, t)
        t.run_id = t.run_id or self.wb_config.run_id
        t.lineage.setdefault("train_step", self.state.global_step)

    def rollout(self, prompts: list[str]) -> dict[str, list[Any]]:
        """TRL's `rollout_func`: the rows `_generate_and_score_completions` prepared, one per prompt."""
        if self._pending is None or len(self._pending["prompt_ids"]) != len(prompts):
            raise TrainingError("rollout called outside a generation batch")
        return self._pending

    def _collect(self, inputs: list[dict[str, Any]]) -> list[Trajectory]:
        """Run (and score) the episodes of a generation batch; dynamic sampling refills flat groups."""
        for curriculum in self.curricula:
            curriculum.set_training_step(self.state.global_step + 1)
        if self.overlapped is not None and self._training:  # the producer drew these tasks itself
            trajs = self.overlapped.collect(self.state.global_step)
        else:
            trajs = self.run_episodes([Task(**json.loads(r["task_json"])) for r in inputs])
        if self.wb_config.dynamic_sampling and self._training:
            before = list(trajs)
            report = dynamic_sampling(
                trajs,
                known(self.num_generations, "num_generations"),
                self._draw,
                self.run_episodes,
                self.wb_config.max_refill_rounds,
            )
            self.log_metric("dynamic_sampling/refill_rounds", report.rounds)
            self.log_metric("dynamic_sampling/refill_prompts", report.prompts_refilled)
            self.log_metric("dynamic_sampling/zero_std_groups_left", report.zero_std_groups_left)
            self._record("dropped_groups", step_records.dropped_payload(self.state.global_step, before, trajs))
        self.last_trajectories = trajs
        self._log_episodes(trajs)
        return trajs

    def _rows(self, trajs: list[Trajectory]) -> tuple[list[dict[str, Any]], list[int]]:
        """Training rows (one per trained segment, then fillers) and each row's trajectory (-1 = filler)."""
        from accelerate.utils import gather_object

        group = known(self.num_generations if self._training else self.num_generations_eval, "num_generations")
        steps = known(self.args.steps_per_generation, "steps_per_generation")
        unit = group * steps // math.gcd(group, steps)
        eos = getattr(self.processing_class, "eos_token_id", None)
        width = known(self.args.max_completion_length, "max_completion_length")
        rows = TrainingRows.build(trajs, eos, width, self.wb_config.segments)
        most = max(gather_object([len(rows.samples)]))
        rows.pad_to(-(-most // unit) * unit)
        self.log_metric("episode/segments", rows.segments / max(len(trajs), 1))
        self._pending = rows.pending()
        return rows.dataset_rows(), rows.row_traj

    def _log_episodes(self, trajs: list[Trajectory]) -> None:
        """Episode metrics over the global batch; the main process writes every rank's episodes."""
        if self.accelerator.num_processes > 1:
            from accelerate.utils import gather_object

            trajs = gather_object(trajs)  # every rank's, in process order
        n = max(len(trajs), 1)
        self.log_metric("episode/steps", sum(len(t.steps) for t in trajs) / n)
        self.log_metric("episode/host_calls", sum(t.num_host_calls for t in trajs) / n)
        for kind, count in Counter(t.termination for t in trajs).items():
            self.log_metric(f"episode/end_{kind or 'unknown'}", count / n)
        for name, value in pass_rate_by_hop(trajs).items():
            self.log_metric(name, value)
        if self.accelerator.is_main_process:
            for t in trajs:  # scored in run_episodes; written here, once
                self.recorder.record(t)

    # -- advantages --------------------------------------------------------------------------
    def _generate_and_score_completions(self, inputs: list[dict[str, Any]]) -> dict[str, Any]:
        trajs = self._collect(inputs)
        rows, row_traj = self._rows(trajs)
        step_index = self._pending["step_index"] if self._pending is not None else []
        if self.overlapped is not None and self.use_vllm:
            self._last_loaded_step = self.state.global_step  # TRL would load the engine now, mid-wave: not here
        try:
            out = super()._generate_and_score_completions(rows)
        finally:
            self._pending = None
        if self._training:
            self._set_advantages(out, trajs, row_traj, step_index)
            if self.overlapped is not None:
                self.overlapped.correct(out, trajs, row_traj, step_index)  # π_prox: the gap's trainer side
        if self.use_vllm:
            self._log_logp_gap(out)
        return out

    def _set_advantages(
        self, out: dict[str, Any], trajs: list[Trajectory], row_traj: list[int], step_index: list[list[int]]
    ) -> None:
        """The estimator's advantages of the global batch on this process's rows, where TRL's loss reads them."""
        from accelerate.utils import gather_object

        every = gather_object(trajs)  # the global batch, in process order
        offset = self.accelerator.process_index * len(trajs)
        group = known(self.num_generations, "num_generations")
        batch = Batch(every, group, float(self.wb_config.epsilon), str(self.scale_rewards))
        rows = row_advantages(self.estimator, batch, offset, row_traj, step_index, out["completion_ids"].size(1))
        if step_records.event_log(self.store) is not None:  # the estimator again: its per-trajectory values
            adv_record = self.estimator.advantages(batch)
            self._record(
                "advantages",
                step_records.advantages_payload(self.state.global_step, self.estimator.name, batch, adv_record),
            )
        place_advantages(out, rows, self.accelerator)
        if rows.keep is not None:
            self.log_metric(f"{self.estimator.name}/kept_rows", float(rows.keep.float().mean()))

    def _record(self, kind: str, payload: dict[str, Any] | None) -> None:
        """Log a step record (`workbench.train.step_records`) when the store takes events."""
        log = step_records.event_log(self.store)
        if log is not None and payload is not None:
            log.log_event(self.wb_config.run_id, kind, payload)

    def _get_train_sampler(self, dataset: Any = None) -> Any:
        key = self.estimator.group_key
        if key is None:
            return super()._get_train_sampler(dataset)
        return group_sampler(dataset if dataset is not None else self.train_dataset, key, self.args)


__all__ = [
    "REQUIRED_TRL",
    "WorkbenchGRPOTrainer",
    "check_trl_version",
    "row_advantages",
    "tasks_dataset",
    "workbench_reward",
]

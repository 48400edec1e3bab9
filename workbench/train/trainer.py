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
  a new one needs no change here), computed per trajectory over the global batch and placed on its
  rows; the trainer applies what the `Advantages` carry (a per-row upper clip, rows kept, token
  whitening) and the estimator's `group_key` picks the batch sampler. Built in: grpo (TRL's
  group normalisation), hrpo (one rollout per question, whole hop groups per batch, normalised per
  hop count), reinforce_pp (whitened discounted per-turn returns on each turn's tokens, (B, T)),
  adpo (grpo · s(p) and a per-sample upper clip used in `_compute_loss`), asearcher (group-centred,
  biased and scaled, flat groups dropped from the loss, then whitened over loss tokens), reinforce
  (the raw reward).
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
- The loss side (adpo's per-sample clips, decoupled PPO's weights, the logprob gap, the chunked logprob
  head) is `workbench.train.trainer_loss`; what construction checks and installs, `workbench.train.trainer_setup`.
- These are private TRL methods, so the TRL version is pinned and checked.
"""

from __future__ import annotations

import json
import logging
import math
import os
from collections import Counter
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from workbench.contracts import Curriculum, EpisodeRunner, TrajectoryStore
from workbench.errors import TrainingError
from workbench.train import advantages as A
from workbench.train import step_records
from workbench.train.config import TrainConfig
from workbench.train.estimators import Batch
from workbench.train.heap import fix_mmap_threshold
from workbench.train.lora import lora_config
from workbench.train.policy import live_policy, run_sync
from workbench.train.processes import process_rank, world_size
from workbench.train.rewards import resolve_reward, score_trajectory
from workbench.train.rollout import dynamic_sampling, pass_rate_by_hop, task_drawer
from workbench.train.rows import TrainingRows, row_advantages, tasks_dataset, workbench_reward
from workbench.trajectory import Task, Trajectory

if TYPE_CHECKING:
    from trl import GRPOConfig

    from workbench.policies.base import Policy
    from workbench.train.async_trainer import AsyncTraining
    from workbench.train.policy import ColocatedVLLMPolicy

REQUIRED_TRL = "1.16.0"
TASK_DRAW_SEED_OFFSET = 1
"""Refill tasks are drawn with seed + 1: apart from TRL's own sampler and init (seeded with seed)."""
RANK_SEED_STRIDE = 1_000_003
"""Each rank of a several-process run draws its refills with seed + 1 + rank * this: different tasks per rank."""


def check_trl_version() -> None:
    import trl

    if trl.__version__ != REQUIRED_TRL:
        raise TrainingError(
            f"workbench.train subclasses private GRPOTrainer methods of trl=={REQUIRED_TRL}, "
            f"but trl {trl.__version__} is installed; run `pip install trl=={REQUIRED_TRL}`"
        )


check_trl_version()
os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")  # rollout_func is the documented multi-turn hook

from transformers import TrainerCallback  # noqa: E402
from trl import GRPOTrainer  # noqa: E402

from workbench.train.trainer_loss import LossTrainer  # noqa: E402
from workbench.train.trainer_setup import (  # noqa: E402
    AdapterSettingsOnSave,
    OwnRowsFilter,
    PublishAfterStep,
    SyncAfterStep,
    check_batches,
    group_sampler,
    known,
    place_tensorboard_logs,
    prepare_vllm,
)


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
        self._gap_in_loss = False  # the loss's forward logs sampling/logp_gap (see `_log_logp_gap`)
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
        self._install_chunked_head()
        if shared:
            self._share_vllm_engine(args)
        self._add_own_callbacks()
        self.async_training = self._async_training() if config.async_rollouts else None

    def _add_own_callbacks(self) -> None:
        """vLLM's weight sync after each step (asynchronous runs load at turn boundaries instead), LoRA
        checkpoints' agent settings, TensorBoard's log dir."""
        if self.use_vllm and not self.wb_config.async_rollouts:
            self.add_callback(SyncAfterStep(self))
        if self.wb_config.lora_r:
            self.add_callback(AdapterSettingsOnSave(self))
        place_tensorboard_logs(self.callback_handler.callbacks, str(self.args.output_dir))

    def _async_training(self) -> AsyncTraining:
        """`async_rollouts`: the producer and rollout copy, and the weights published after each step."""
        from workbench.train.async_trainer import AsyncTraining

        async_training = AsyncTraining(self, self._score)
        self.add_callback(PublishAfterStep(async_training))
        return async_training

    def _share_vllm_engine(self, args: GRPOConfig) -> None:
        """Generate with the process's shared colocated engine instead of TRL's own."""
        from workbench.train.vllm_rollout import shared_generation

        args.use_vllm = self.use_vllm = True
        self.vllm_generation = shared_generation(self, args)
        self._last_loaded_step = -1

    def train(self, *args: Any, **kwargs: Any) -> Any:
        """TRL's `train`; an asynchronous producer stops with it, however it ends (its episodes
        release their kernels)."""
        try:
            return super().train(*args, **kwargs)
        finally:
            if self.async_training is not None:
                self.async_training.close()

    # -- vLLM ----------------------------------------------------------------------------------
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
                from workbench.train.policy import VLLMTrainerPolicy

                return VLLMTrainerPolicy(self)
            if self._colocated_policy is None:
                from workbench.train.policy import ColocatedVLLMPolicy

                self._colocated_policy = ColocatedVLLMPolicy(self.vllm_generation.llm)
            return self._colocated_policy
        return live_policy(self.accelerator.unwrap_model(self.model), self.processing_class)

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
        if self.async_training is not None and self._training:  # the producer drew these tasks itself
            trajs = self.async_training.collect(self.state.global_step)
        else:
            trajs = self.run_episodes([Task(**json.loads(r["task_json"])) for r in inputs])
        metrics = self._metrics["train"]
        if self.wb_config.dynamic_sampling and self._training:
            before = list(trajs)
            report = dynamic_sampling(
                trajs,
                known(self.num_generations, "num_generations"),
                self._draw,
                self.run_episodes,
                self.wb_config.max_refill_rounds,
            )
            metrics["dynamic_sampling/refill_rounds"].append(report.rounds)
            metrics["dynamic_sampling/refill_prompts"].append(report.prompts_refilled)
            metrics["dynamic_sampling/zero_std_groups_left"].append(report.zero_std_groups_left)
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
        self._metrics["train"]["episode/segments"].append(rows.segments / max(len(trajs), 1))
        self._pending = rows.pending()
        return rows.dataset_rows(), rows.row_traj

    def _log_episodes(self, trajs: list[Trajectory]) -> None:
        """Episode metrics over the global batch; the main process writes every rank's episodes."""
        if self.accelerator.num_processes > 1:
            from accelerate.utils import gather_object

            trajs = gather_object(trajs)  # every rank's, in process order
        m = self._metrics["train"]
        n = max(len(trajs), 1)
        m["episode/steps"].append(sum(len(t.steps) for t in trajs) / n)
        m["episode/host_calls"].append(sum(t.num_host_calls for t in trajs) / n)
        for kind, count in Counter(t.termination for t in trajs).items():
            m[f"episode/end_{kind or 'unknown'}"].append(count / n)
        for name, value in pass_rate_by_hop(trajs).items():
            m[name].append(value)
        if self.accelerator.is_main_process:
            for t in trajs:  # scored in run_episodes; written here, once
                self.recorder.record(t)

    # -- advantages --------------------------------------------------------------------------
    def _generate_and_score_completions(self, inputs: list[dict[str, Any]]) -> dict[str, Any]:
        trajs = self._collect(inputs)
        rows, row_traj = self._rows(trajs)
        step_index = self._pending["step_index"] if self._pending is not None else []
        if self.async_training is not None and self.use_vllm:
            self._last_loaded_step = self.state.global_step  # TRL would load the engine now, mid-wave: not here
        try:
            out = super()._generate_and_score_completions(rows)
        finally:
            self._pending = None
        if self._training:
            self._set_advantages(out, trajs, row_traj, step_index)
            if self.async_training is not None:
                self.async_training.correct(out, trajs, row_traj, step_index)  # π_prox: the gap's trainer side
        if self.use_vllm:
            self._log_logp_gap(out)
        return out

    def _set_advantages(
        self, out: dict[str, Any], trajs: list[Trajectory], row_traj: list[int], step_index: list[list[int]]
    ) -> None:
        from accelerate.utils import gather_object

        device = out["advantages"].device
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
        adv = rows.values
        if rows.keep is not None:  # rows of dropped trajectories (asearcher's flat groups) leave the loss
            keep = rows.keep.to(device)
            out["tool_mask"] = out["tool_mask"] * keep.unsqueeze(1).to(out["tool_mask"].dtype)
            tokens = (out["completion_mask"] * out["tool_mask"]).sum(dim=1)
            out["num_items_in_batch"] = self.accelerator.gather(tokens.sum()).sum()
            self._metrics["train"][f"{self.estimator.name}/kept_rows"].append(float(keep.float().mean()))
        if rows.token_whiten:  # whitened over every loss token of the global batch
            tokens = (out["completion_mask"] * out["tool_mask"]).sum(dim=1)
            values = gather_object(adv.tolist())
            counts = gather_object(tokens.tolist())
            start = sum(gather_object([len(row_traj)])[: self.accelerator.process_index])
            adv = A.token_whiten(values, counts)[start : start + len(row_traj)]
            if rows.keep is not None:
                adv = adv * rows.keep
        out["advantages"] = adv.to(device)
        if rows.eps_high is not None:
            out["eps_high"] = rows.eps_high.to(device)

    def _record(self, kind: str, payload: dict[str, Any] | None) -> None:
        """Log a step record (`workbench.train.step_records`) when the store takes events."""
        log = step_records.event_log(self.store)
        if log is not None and payload is not None:
            log.log_event(self.wb_config.run_id, kind, payload)

    def _get_train_sampler(self, dataset: Any = None) -> Any:
        key = self.estimator.group_key
        if key is None:
            return super()._get_train_sampler(dataset)
        return group_sampler(self, dataset if dataset is not None else self.train_dataset, key)


__all__ = [
    "REQUIRED_TRL",
    "WorkbenchGRPOTrainer",
    "check_trl_version",
    "row_advantages",
    "tasks_dataset",
    "workbench_reward",
]

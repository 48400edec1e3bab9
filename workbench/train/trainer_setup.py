"""What `WorkbenchGRPOTrainer` checks and installs when it is built: the batch checks that name their fix,
the callbacks it adds after each optimizer step or checkpoint, its log filter and vLLM's preparation."""

from __future__ import annotations

import json
import logging
import os
from typing import TYPE_CHECKING, Any

from transformers import TrainerCallback

from workbench.errors import ConfigError, TrainingError
from workbench.train.config import TrainConfig
from workbench.train.estimators import Estimator
from workbench.trajectory import Task

if TYPE_CHECKING:
    from workbench.train.async_trainer import AsyncTraining
    from workbench.train.trainer import WorkbenchGRPOTrainer


def check_batches(tasks: list[Task], config: TrainConfig, estimator: Estimator, per_batch: int) -> None:
    """A ConfigError naming the fix when the tasks cannot fill one batch (or its groups), or dynamic
    sampling meets an estimator with one rollout per question."""
    need = per_batch // estimator.rollouts_per_task(config.num_generations)
    if len(tasks) < need:
        raise ConfigError(
            f"{len(tasks)} tasks cannot fill one batch: {config.estimator} needs at least {need} "
            "distinct tasks; add tasks or lower per_device_train_batch_size"
        )
    if config.dynamic_sampling and estimator.group_key is not None:
        raise ConfigError(
            f"dynamic_sampling refills per-question groups; {config.estimator} has one rollout per question "
            f"(grouped by {estimator.group_key}). Turn dynamic_sampling off or use an estimator grouping the "
            "rollouts of one question (grpo/adpo/reinforce_pp)"
        )
    if estimator.group_key is not None:
        check_groups(tasks, estimator.group_key, config.num_generations, per_batch)


def check_groups(tasks: list[Task], group_key: str, num_generations: int, per_batch: int) -> None:
    from workbench.train.sampler import HopGroupSampler

    HopGroupSampler(
        [t.metadata.get(group_key) for t in tasks], num_generations, per_batch
    )  # raises a ConfigError naming the fix when the groups cannot be filled


class PublishAfterStep(TrainerCallback):
    """Asynchronous rollouts: the new weights to the rollout copy after each optimizer step."""

    def __init__(self, async_training: AsyncTraining) -> None:
        self.async_training = async_training

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self.async_training.publish(state.global_step)


class SyncAfterStep(TrainerCallback):
    """vLLM gets the new weights right after each optimizer step (TRL alone syncs before the next rollout)."""

    def __init__(self, trainer: WorkbenchGRPOTrainer) -> None:
        self.trainer = trainer

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self.trainer.sync_vllm_weights()


class AdapterSettingsOnSave(TrainerCallback):
    """LoRA: each checkpoint-N (an adapter, no config.json) gets the agent settings beside it, as `final/` does."""

    def __init__(self, trainer: WorkbenchGRPOTrainer) -> None:
        self.trainer = trainer

    def on_save(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        from transformers.trainer_utils import PREFIX_CHECKPOINT_DIR

        from workbench.train.lora import save_adapter_settings

        if state.is_world_process_zero:
            checkpoint = os.path.join(str(args.output_dir), f"{PREFIX_CHECKPOINT_DIR}-{state.global_step}")
            save_adapter_settings(self.trainer.model, checkpoint)


class OwnRowsFilter(logging.Filter):
    """Silences TRL's 'all reward functions returned None' warning for rows that are unscored on purpose."""

    def filter(self, record: logging.LogRecord) -> bool:
        msg = record.getMessage()
        return not ("All reward functions returned None" in msg and "'wb_row': '" in msg)


def known(value: int | None, name: str) -> int:
    """A TRL setting its trainer fills in at construction (typed Optional there)."""
    if value is None:
        raise TrainingError(f"TRL left {name} unset; build the trainer through WorkbenchGRPOTrainer(...)")
    return value


def prepare_vllm(model: Any, config: TrainConfig) -> None:
    from workbench.train.vllm_rollout import check_model, on_cpu

    check_model(model.config)
    if on_cpu():  # TRL's own colocated engine (several processes) reads its KV cache size from here
        os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", str(config.vllm_kv_cache_gib))


def group_sampler(trainer: WorkbenchGRPOTrainer, dataset: Any, key: str) -> Any:
    """The batch sampler of an estimator with a `group_key`: one rollout per distinct question, each batch
    whole groups of questions sharing the key (hrpo: hops). `dataset` is the trainer's `datasets.Dataset`."""
    from workbench.train.sampler import HopGroupSampler

    hops = [json.loads(row)["metadata"].get(key) for row in dataset["task_json"]]
    args = trainer.args
    return HopGroupSampler(
        hops,
        known(trainer.num_generations, "num_generations"),
        known(args.generation_batch_size, "generation_batch_size"),
        repeat_count=trainer.num_iterations * known(args.steps_per_generation, "steps_per_generation"),
        seed=args.seed,
    )


def place_tensorboard_logs(callbacks: list[TrainerCallback], output_dir: str) -> None:
    """TensorBoard events under `<output_dir>/tensorboard` (TENSORBOARD_LOGGING_DIR still wins)."""
    from transformers.integrations import TensorBoardCallback

    for cb in callbacks:
        if isinstance(cb, TensorBoardCallback) and cb.logging_dir is None:
            cb.logging_dir = os.path.join(output_dir, "tensorboard")


__all__ = [
    "AdapterSettingsOnSave",
    "OwnRowsFilter",
    "PublishAfterStep",
    "SyncAfterStep",
    "check_batches",
    "check_groups",
    "group_sampler",
    "known",
    "place_tensorboard_logs",
    "prepare_vllm",
]

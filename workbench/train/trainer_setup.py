"""What `WorkbenchGRPOTrainer` checks and installs when it is built: the batch checks that name their fix,
the callbacks it adds after each optimizer step or checkpoint, its log filter and vLLM's preparation."""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from transformers import TrainerCallback

from workbench.errors import ConfigError, TrainingError
from workbench.train.config import TrainConfig
from workbench.train.estimators import Estimator
from workbench.trajectory import Task

if TYPE_CHECKING:
    from trl import GRPOConfig

REQUIRED_TRL = "1.16.0"


def check_trl_version() -> None:
    """A TrainingError naming the fix unless the pinned TRL is installed (workbench subclasses its private methods)."""
    import trl

    if trl.__version__ != REQUIRED_TRL:
        raise TrainingError(
            f"workbench.train subclasses private GRPOTrainer methods of trl=={REQUIRED_TRL}, "
            f"but trl {trl.__version__} is installed; run `pip install trl=={REQUIRED_TRL}`"
        )


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
    """Overlapped training: `publish(global_step)` (the new weights to the rollout copy) after each optimizer step."""

    def __init__(self, publish: Callable[[int], None]) -> None:
        self.publish = publish

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self.publish(state.global_step)


class SyncAfterStep(TrainerCallback):
    """`sync()` (vLLM gets the new weights) right after each optimizer step (TRL alone syncs before the next
    rollout)."""

    def __init__(self, sync: Callable[[], None]) -> None:
        self.sync = sync

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self.sync()


class AdapterSettingsOnSave(TrainerCallback):
    """LoRA: `save_settings(checkpoint_dir)` beside each checkpoint-N (an adapter, no config.json), which
    writes the agent settings there as `final/` has them."""

    def __init__(self, save_settings: Callable[[str], None]) -> None:
        self.save_settings = save_settings

    def on_save(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        from transformers.trainer_utils import PREFIX_CHECKPOINT_DIR

        if state.is_world_process_zero:
            self.save_settings(os.path.join(str(args.output_dir), f"{PREFIX_CHECKPOINT_DIR}-{state.global_step}"))


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
    from workbench.policies.vllm_colocated import check_model, on_cpu

    check_model(model.config)
    if on_cpu():  # TRL's own colocated engine (several processes) reads its KV cache size from here
        os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", str(config.vllm_kv_cache_gib))


def group_sampler(dataset: Any, key: str, args: GRPOConfig) -> Any:
    """The batch sampler of an estimator with a `group_key`: one rollout per distinct question, each batch
    whole groups of questions sharing the key (hrpo: hops). `dataset` is the trainer's `datasets.Dataset`,
    `args` its TRL config (group and batch sizes, iterations and steps per generation, seed)."""
    from workbench.train.sampler import HopGroupSampler

    hops = [json.loads(row)["metadata"].get(key) for row in dataset["task_json"]]
    return HopGroupSampler(
        hops,
        known(args.num_generations, "num_generations"),
        known(args.generation_batch_size, "generation_batch_size"),
        repeat_count=args.num_iterations * known(args.steps_per_generation, "steps_per_generation"),
        seed=args.seed,
    )


def place_tensorboard_logs(callbacks: list[TrainerCallback], output_dir: str) -> None:
    """TensorBoard events under `<output_dir>/tensorboard` (TENSORBOARD_LOGGING_DIR still wins)."""
    from transformers.integrations import TensorBoardCallback

    for cb in callbacks:
        if isinstance(cb, TensorBoardCallback) and cb.logging_dir is None:
            cb.logging_dir = os.path.join(output_dir, "tensorboard")


__all__ = [
    "REQUIRED_TRL",
    "AdapterSettingsOnSave",
    "OwnRowsFilter",
    "PublishAfterStep",
    "SyncAfterStep",
    "check_batches",
    "check_groups",
    "check_trl_version",
    "group_sampler",
    "known",
    "place_tensorboard_logs",
    "prepare_vllm",
]

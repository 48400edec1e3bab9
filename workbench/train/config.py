"""`TrainConfig`: one config object for a training run, from a file or from keyword arguments.

    cfg = TrainConfig.load("runs/demo/train.toml")             # TOML or YAML
    cfg = TrainConfig(model_path="runs/tiny", tasks_path="tasks.jsonl", estimator="hrpo")
    cfg = TrainConfig.load("train.toml", max_steps=3)           # file, then overrides
    cfg = TrainConfig.preset("drzero_solver", model_path="runs/tiny")   # a seed paper's settings

Every field carries `help` metadata (shown by `workbench train --help-config`). `to_grpo_config()`
maps the run onto TRL's `GRPOConfig`; the workbench-only fields (estimator, episodes, dynamic
sampling) are read by `WorkbenchGRPOTrainer` itself.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from workbench.configfile import check_fields, read_config_file
from workbench.errors import ConfigError

ESTIMATORS = ("grpo", "hrpo", "reinforce_pp", "adpo", "asearcher", "reinforce")
EPISODE_KINDS = ("search_r1", "nbagent")
SEGMENTS = ("all", "last")
SEARCH_ENGINES = ("bm25", "simulated")
IS_MODES = ("token_truncate", "token_mask", "sequence_truncate", "sequence_mask")
SCHEDULES = ("constant", "linear", "cosine", "constant_with_warmup", "cosine_with_min_lr")


def _f(default: Any, help: str, **kw: Any) -> Any:
    if isinstance(default, (list, dict)):
        return field(default_factory=lambda d=default: type(d)(d), metadata={"help": help}, **kw)
    return field(default=default, metadata={"help": help}, **kw)


@dataclass
class TrainConfig:
    """Settings of one RL run. Field docs live in each field's `help` metadata."""

    # -- what to train, on what --------------------------------------------------------------
    model_path: str = _f("", "Local directory of the model + tokenizer to train (never a hub id).")
    output_dir: str = _f("runs/train", "Where checkpoints, metrics.jsonl and the run log go.")
    tasks_path: str = _f("", "JSONL of tasks (id, question, golden_answers, metadata such as hops).")
    run_id: str = _f("", "Run id for the store's metrics; defaults to the output dir's name.")
    store_path: str = _f("", "SQLite store to log metrics into (optional; metrics.jsonl is always written).")
    # -- algorithm ---------------------------------------------------------------------------
    estimator: str = _f(
        "grpo",
        "Advantage estimator: grpo | hrpo | reinforce_pp | adpo | asearcher | reinforce "
        "(see workbench.train.advantages).",
    )
    reward: str = _f("exact_match", "Reward spec: a registered name or a JSON spec for workbench.rewards.")
    num_generations: int = _f(
        4,
        "Rollouts per question (grpo/adpo/reinforce_pp/asearcher/reinforce); hrpo "
        "samples 1 rollout per question and this many same-hop questions per group.",
    )
    per_device_train_batch_size: int = _f(4, "Sequences per optimizer micro-batch (multiple of num_generations).")
    gradient_accumulation_steps: int = _f(1, "Micro-batches per optimizer step.")
    max_steps: int = _f(10, "Optimizer steps to run.")
    learning_rate: float = _f(1e-6, "Peak learning rate.")
    lr_scheduler_type: str = _f(
        "constant", "LR schedule: constant | linear | cosine | constant_with_warmup | cosine_with_min_lr."
    )
    warmup_steps: int = _f(0, "Linear warm-up steps.")
    warmup_ratio: float = _f(0.0, "Warm-up as a share of max_steps (used when warmup_steps is 0).")
    weight_decay: float = _f(0.0, "AdamW weight decay.")
    max_grad_norm: float = _f(1.0, "Gradient clipping norm.")
    beta: float = _f(0.0, "KL coefficient against the reference model (k3 estimator, in the loss).")
    epsilon: float = _f(0.2, "Lower clip range of the ratio (1 - epsilon).")
    epsilon_high: float = _f(0.28, "Upper clip range (1 + epsilon_high); adpo widens it per sample.")
    loss_type: str = _f("dapo", "TRL loss aggregation: grpo | dr_grpo | dapo | bnpo.")
    gamma: float = _f(0.95, "Step discount for reinforce_pp returns over multi-step trajectories.")
    segments: str = _f(
        "all",
        "Which context segments of a trimmed trajectory are trained: all (each segment "
        "its own sample, with its turns' advantages) | last (only the final context).",
    )
    asearcher_reward_bias: float = _f(-0.5, "asearcher: bias added to the group-centred reward before scaling.")
    asearcher_reward_scaling: float = _f(10.0, "asearcher: scale of the biased, centred reward.")
    asearcher_reward_clip: float = _f(20.0, "asearcher: clip of the scaled reward (±).")
    asearcher_adv_norm: bool = _f(True, "asearcher: whiten advantages over every loss token of the batch.")
    adpo_min_scale: float = _f(0.6, "ADPO: advantage scale at self-consistency <= adpo_p_low (m).")
    adpo_p_low: float = _f(0.3, "ADPO: self-consistency where the advantage scale starts to rise.")
    adpo_p_high: float = _f(0.8, "ADPO: self-consistency where the scale reaches 1 and eps_high its floor.")
    adpo_eps_boost: float = _f(0.1, "ADPO: extra upper clip at low self-consistency.")
    dynamic_sampling: bool = _f(False, "Drop groups whose rewards are all equal and refill with new prompts.")
    max_refill_rounds: int = _f(2, "Dynamic sampling: refill rounds per batch before training on what is left.")
    max_completion_length: int = _f(256, "Cap on a trajectory's completion tokens (model + observation).")
    temperature: float = _f(1.0, "Sampling temperature during rollouts.")
    # -- episodes ----------------------------------------------------------------------------
    episode_kind: str = _f("search_r1", "Episode runner: search_r1 (tag-based search tool) | nbagent.")
    corpus_path: str = _f("", "search_r1: JSONL corpus ({id, contents} or {title, text}) for the BM25 retriever.")
    top_k: int = _f(3, "search_r1: documents per search.")
    search_engine: str = _f(
        "bm25",
        "Search behind the episodes: bm25 (over corpus_path) | simulated (an LLM "
        "writes the documents, ZeroSearch; set sim_policy).",
    )
    sim_policy: str = _f(
        "", "simulated: the simulator LLM, as a policy spec (a local model dir, 'openai:URL', 'scripted:NAME' …)."
    )
    sim_p_start: float = _f(0.0, "simulated: P(noisy documents) at the first step (ZeroSearch p_s).")
    sim_p_end: float = _f(0.5, "simulated: P(noisy documents) from the last step on (ZeroSearch p_e).")
    sim_b: float = _f(4.0, "simulated: exponential base b of the curriculum (ZeroSearch eq. 1).")
    sim_total_steps: int = _f(0, "simulated: m in ZeroSearch eq. 1; 0 = max_steps.")
    max_turns: int = _f(4, "Model turns per episode.")
    max_turn_tokens: int = _f(64, "New tokens per model turn.")
    agent_profile: str = _f("default", "nbagent: sandbox profile name.")
    concurrency: int = _f(4, "Episodes run at once (with executor='ray': kernels per worker).")
    executor: str = _f(
        "local",
        "nbagent: where episodes run: local (kernels here) | ray (kernel workers on a Ray "
        "cluster; the model stays in the trainer; needs pip install 'workbench[ray]').",
    )
    ray_address: str = _f(
        "", "executor='ray': 'auto' (the cluster `ray start` runs here), HOST:PORT, or '' to start a local one."
    )
    ray_workers: int = _f(1, "executor='ray': kernel workers to place.")
    # -- bookkeeping -------------------------------------------------------------------------
    seed: int = _f(0, "Random seed (sampler, sampling, init).")
    save_steps: int = _f(0, "Save a checkpoint every N steps (0 = only at the end).")
    resume_from: str = _f("", "Checkpoint dir to resume from, or 'latest' for the newest in output_dir.")
    logging_steps: int = _f(1, "Log metrics every N steps.")
    use_cpu: bool = _f(True, "Train on CPU (set False on a GPU machine).")
    bf16: bool = _f(False, "bf16 mixed precision (GPU).")
    use_vllm: bool = _f(
        False,
        "Generate rollouts with vLLM (CPU build or CUDA): an in-process engine synced "
        "with the trained weights after every optimizer step (workbench.train.vllm_rollout).",
    )
    vllm_mode: str = _f(
        "colocate", "vLLM mode: colocate (in-process; CPU or GPU) | server (`vllm serve`, NCCL weight sync: CUDA only)."
    )
    vllm_gpu_memory_utilization: float = _f(0.3, "Colocate on GPU: share of GPU memory vLLM may take.")
    vllm_kv_cache_gib: int = _f(1, "Colocate on vLLM's CPU build: KV cache size in GiB.")
    vllm_importance_sampling_correction: bool = _f(
        False,
        "Correct the gap between vLLM's sampling logprobs and "
        "the trainer's (TRL's truncated/masked importance "
        "sampling). The gap is logged either way "
        "(sampling/logp_gap/mean|max).",
    )
    vllm_importance_sampling_mode: str = _f(
        "sequence_mask", "IS correction: token_truncate | token_mask | sequence_truncate | sequence_mask (TRL's modes)."
    )
    vllm_importance_sampling_clip_max: float = _f(3.0, "IS correction: upper bound of the ratio (TRL's C_max).")
    report_to: list = _f(
        [],
        "Logging integrations passed to TRL/transformers, offline: tensorboard "
        "(<output_dir>/tensorboard), trackio (<output_dir>/trackio), or any other "
        "transformers knows (wandb, mlflow ...). metrics.jsonl is always written.",
    )
    extra_grpo_args: dict = _f({}, "Extra keyword arguments passed to trl.GRPOConfig as is.")

    def __post_init__(self) -> None:
        self.validate()

    # -- checks ------------------------------------------------------------------------------
    def validate(self) -> None:
        def bad(name: str, why: str) -> ConfigError:
            return ConfigError(f"TrainConfig.{name}: {why}")

        if self.estimator not in ESTIMATORS:
            raise bad("estimator", f"{self.estimator!r} is not one of {', '.join(ESTIMATORS)}")
        if self.episode_kind not in EPISODE_KINDS:
            raise bad("episode_kind", f"{self.episode_kind!r} is not one of {', '.join(EPISODE_KINDS)}")
        if self.executor not in ("local", "ray"):
            raise bad("executor", f"{self.executor!r} is not 'local' or 'ray'")
        if self.executor == "ray" and (self.episode_kind != "nbagent" or self.search_engine != "bm25"):
            raise bad(
                "executor",
                "'ray' runs nbagent episodes with search_engine='bm25' (the other kinds run "
                "no kernels; the simulated search's curriculum lives in the trainer)",
            )
        if self.lr_scheduler_type not in SCHEDULES:
            raise bad("lr_scheduler_type", f"{self.lr_scheduler_type!r} is not one of {', '.join(SCHEDULES)}")
        if self.vllm_mode not in ("colocate", "server"):
            raise bad("vllm_mode", "use 'colocate' or 'server'")
        if self.segments not in SEGMENTS:
            raise bad("segments", f"{self.segments!r} is not one of {', '.join(SEGMENTS)}")
        if self.search_engine not in SEARCH_ENGINES:
            raise bad("search_engine", f"{self.search_engine!r} is not one of {', '.join(SEARCH_ENGINES)}")
        if self.search_engine == "simulated":
            for name in ("sim_p_start", "sim_p_end"):
                if not 0.0 <= getattr(self, name) <= 1.0:
                    raise bad(name, "is a probability; use a value in [0, 1]")
            if self.sim_b <= 0:
                raise bad("sim_b", "the exponential base must be > 0")
        if self.num_generations < 2:
            raise bad("num_generations", "must be >= 2 (it is the group size; hrpo groups distinct questions)")
        if self.per_device_train_batch_size % self.num_generations:
            raise bad(
                "per_device_train_batch_size",
                f"{self.per_device_train_batch_size} is not a multiple of "
                f"num_generations={self.num_generations}; make it one",
            )
        if not 0.0 <= self.warmup_ratio < 1.0:
            raise bad("warmup_ratio", "must be in [0, 1)")
        if not 0.0 < self.gamma <= 1.0:
            raise bad("gamma", "must be in (0, 1]")
        if self.max_steps < 1 or self.max_turns < 1 or self.max_completion_length < 1:
            raise bad("max_steps/max_turns/max_completion_length", "must be >= 1")
        if self.vllm_importance_sampling_mode not in IS_MODES:
            raise bad(
                "vllm_importance_sampling_mode",
                f"{self.vllm_importance_sampling_mode!r} is not one of {', '.join(IS_MODES)}",
            )
        if self.vllm_kv_cache_gib < 1:
            raise bad("vllm_kv_cache_gib", "must be a whole number of GiB >= 1")
        if isinstance(self.report_to, str):
            self.report_to = [] if self.report_to in ("", "none") else [self.report_to]
        if not all(isinstance(r, str) and r for r in self.report_to):
            raise bad("report_to", "list integration names, e.g. ['tensorboard', 'trackio']")
        if self.use_vllm and self.estimator == "hrpo" and self.vllm_mode == "server":
            raise bad(
                "vllm_mode",
                "hrpo groups distinct questions, which vLLM server mode de-duplicates; use vllm_mode='colocate'",
            )

    # -- loading -----------------------------------------------------------------------------
    @classmethod
    def fields_help(cls, preset: str | None = None) -> dict[str, str]:
        """Each field's help; with `preset`, the preset's value and its source appended."""
        helps = {f.name: f.metadata.get("help", "") for f in dataclasses.fields(cls)}
        if preset:
            from workbench.train.presets import preset_sources, preset_values

            values, sources = preset_values(preset), preset_sources(preset)
            for name, src in sources.items():
                helps[name] += f" [{preset}: {values[name]!r} ({src})]"
        return helps

    @classmethod
    def preset(cls, name: str, **overrides: Any) -> TrainConfig:
        """A seed paper's training settings (see `workbench.train.presets`), then `overrides`."""
        from workbench.train.presets import preset_values

        return cls.from_dict(preset_values(name), **overrides)

    @classmethod
    def from_dict(cls, data: dict[str, Any], **overrides: Any) -> TrainConfig:
        merged = {**data, **overrides}
        check_fields(
            "TrainConfig",
            merged,
            {f.name for f in dataclasses.fields(cls)},
            "see `workbench train --help-config` for the list",
        )
        return cls(**merged)

    @classmethod
    def load(cls, path: str | Path, **overrides: Any) -> TrainConfig:
        """Read a TOML, YAML or JSON file; a `[train]` table is used if present."""
        return cls.from_dict(read_config_file(path, what="train config", table="train"), **overrides)

    def log_locations(self) -> dict[str, str]:
        """Where this run's logs go: metrics.jsonl always, then each `report_to` integration's directory."""
        out = Path(self.output_dir)
        where = {"metrics": str(out / "metrics.jsonl")}
        if "tensorboard" in self.report_to:
            tb = os.environ.get("TENSORBOARD_LOGGING_DIR") or str(out / "tensorboard")
            where["tensorboard"] = f"{tb}  (tensorboard --logdir {tb})"
        if "trackio" in self.report_to:
            tr = os.environ.get("TRACKIO_DIR") or str(out / "trackio")
            where["trackio"] = f"{tr}  (TRACKIO_DIR={tr} trackio show --project {self.run_id or out.name})"
        return where

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def replace(self, **changes: Any) -> TrainConfig:
        return dataclasses.replace(self, **changes)

    # -- TRL ---------------------------------------------------------------------------------
    def to_grpo_config(self) -> Any:
        """The `trl.GRPOConfig` this run trains with."""
        from trl import GRPOConfig

        kwargs: dict[str, Any] = dict(
            output_dir=self.output_dir,
            num_generations=self.num_generations,
            per_device_train_batch_size=self.per_device_train_batch_size,
            gradient_accumulation_steps=self.gradient_accumulation_steps,
            max_steps=self.max_steps,
            learning_rate=self.learning_rate,
            lr_scheduler_type=self.lr_scheduler_type,
            warmup_steps=self.warmup_steps or self.warmup_ratio,  # transformers 5: a float < 1 is a ratio
            weight_decay=self.weight_decay,
            max_grad_norm=self.max_grad_norm,
            beta=self.beta,
            epsilon=self.epsilon,
            epsilon_high=self.epsilon_high,
            loss_type=self.loss_type,
            max_completion_length=self.max_completion_length,
            temperature=self.temperature,
            seed=self.seed,
            save_strategy="steps" if self.save_steps else "no",
            save_steps=self.save_steps or 500,
            logging_steps=self.logging_steps,
            use_cpu=self.use_cpu,
            bf16=self.bf16,
            gradient_checkpointing=False,
            report_to=list(self.report_to) or "none",
            project=self.run_id or Path(self.output_dir).name,  # trackio's project
            trackio_static_space_id=False,  # trackio stays local: no Space is created at the end
            remove_unused_columns=False,
            disable_tqdm=True,
            use_vllm=self.use_vllm,
            vllm_mode=self.vllm_mode,
            vllm_gpu_memory_utilization=self.vllm_gpu_memory_utilization,
            vllm_importance_sampling_correction=self.vllm_importance_sampling_correction,
            vllm_importance_sampling_mode=self.vllm_importance_sampling_mode,
            vllm_importance_sampling_clip_max=self.vllm_importance_sampling_clip_max,
            # rewards arrive already normalised by our estimators where needed; keep TRL's default
            # group scaling for grpo so its logged frac_reward_zero_std stays meaningful.
            scale_rewards="group",
        )
        kwargs.update(self.extra_grpo_args)
        return GRPOConfig(**kwargs)


__all__ = ["EPISODE_KINDS", "ESTIMATORS", "SEARCH_ENGINES", "SEGMENTS", "TrainConfig"]

"""`TrainConfig`: one config object for a training run, from a file or from keyword arguments.

    cfg = TrainConfig.load("runs/demo/train.toml")             # TOML or YAML
    cfg = TrainConfig(model_path="runs/tiny", tasks_path="tasks.jsonl", estimator="hrpo")
    cfg = TrainConfig.load("train.toml", max_steps=3)           # file, then overrides
    cfg = TrainConfig.preset("drzero_solver", model_path="runs/tiny")   # a seed paper's settings
    cfg = TrainConfig(estimator="adpo", estimator_params={"adpo": {"min_scale": 0.5}})  # or adpo_min_scale=0.5
    cfg.make_estimator()                                        # ADPO(min_scale=0.5, p_low=0.3, ...)

Every field carries `help` metadata (shown by `workbench train --help-config`). `to_grpo_config()`
maps the run onto TRL's `GRPOConfig`; the workbench-only fields (estimator, episodes, dynamic
sampling) are read by `WorkbenchGRPOTrainer` itself.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Mapping
from dataclasses import InitVar, dataclass
from pathlib import Path
from typing import Any, Self

from workbench.configfile import Config, check_types, config_field
from workbench.errors import ConfigError
from workbench.models.load import DEVICES
from workbench.train.estimators import BUILTIN, Estimator, estimator_class, make_estimator, parameters_help

ESTIMATORS = BUILTIN  # the built-in estimators; `estimators.estimator_names()` adds registered ones
# flat names of estimator parameters kept from before `estimator_params`: name -> (estimator, parameter)
FLAT_ESTIMATOR_PARAMS = {
    "gamma": ("reinforce_pp", "gamma"),
    "adpo_min_scale": ("adpo", "min_scale"),
    "adpo_p_low": ("adpo", "p_low"),
    "adpo_p_high": ("adpo", "p_high"),
    "adpo_eps_boost": ("adpo", "eps_boost"),
    "asearcher_reward_bias": ("asearcher", "reward_bias"),
    "asearcher_reward_scaling": ("asearcher", "reward_scaling"),
    "asearcher_reward_clip": ("asearcher", "reward_clip"),
    "asearcher_adv_norm": ("asearcher", "adv_norm"),
}
EPISODE_KINDS = ("search_r1", "nbagent")
SEGMENTS = ("all", "last")
SEARCH_ENGINES = ("bm25", "simulated")
IS_MODES = ("token_truncate", "token_mask", "sequence_truncate", "sequence_mask")
CAP_ACTIONS = ("mask", "clamp")  # what the behaviour-weight cap does (workbench.train.decoupled)
PROX_METHODS = ("recompute", "loglinear")  # how async_rollouts gets pi_prox (workbench.train.overlap)
SCHEDULES = ("constant", "linear", "cosine", "constant_with_warmup", "cosine_with_min_lr")


def _bad(name: str, why: str) -> ConfigError:
    return ConfigError(f"TrainConfig.{name}: {why}")


@dataclass
class TrainConfig(Config):
    """Settings of one RL run. Field docs live in each field's `help` metadata; values are checked
    against the annotations (`workbench.configfile.Config`)."""

    config_table = "train"

    # -- what to train, on what --------------------------------------------------------------
    model_path: str = config_field(
        "",
        "The model + tokenizer to train: a hub id (ORG/NAME, ORG/NAME@REVISION; fetched through the "
        "Hugging Face cache), a local model directory, a GGUF file, or a name from `workbench models list`.",
    )
    output_dir: str = config_field("runs/train", "Where checkpoints, metrics.jsonl and the run log go.")
    tasks_path: str = config_field("", "JSONL of tasks (id, question, golden_answers, metadata such as hops).")
    run_id: str = config_field("", "Run id for the store's metrics; defaults to the output dir's name.")
    store_path: str = config_field("", "SQLite store to log metrics into (optional; metrics.jsonl is always written).")
    # -- algorithm ---------------------------------------------------------------------------
    estimator: str = config_field(
        "grpo",
        "Advantage estimator: grpo | hrpo | reinforce_pp | adpo | asearcher | reinforce, or one registered "
        "with @estimator(NAME) (see workbench.train.estimators).",
    )
    estimator_params: dict[str, dict[str, Any]] = config_field(
        {},
        "Estimator parameters by estimator name, e.g. {adpo = {min_scale = 0.5}} (TOML: a "
        "[train.estimator_params.adpo] table); only the chosen estimator's are used, every one is checked. "
        "reinforce_pp: gamma; adpo: min_scale, p_low, p_high, eps_boost; asearcher: reward_bias, "
        "reward_scaling, reward_clip, adv_norm. The flat names (gamma, adpo_min_scale, "
        "asearcher_reward_bias, ...) are still accepted and land here.",
    )
    reward: str = config_field("exact_match", "Reward spec: a registered name or a JSON spec for workbench.rewards.")
    num_generations: int = config_field(
        4,
        "Rollouts per question (grpo/adpo/reinforce_pp/asearcher/reinforce); hrpo "
        "samples 1 rollout per question and this many same-hop questions per group.",
    )
    per_device_train_batch_size: int = config_field(
        4, "Sequences per optimizer micro-batch (multiple of num_generations)."
    )
    gradient_accumulation_steps: int = config_field(1, "Micro-batches per optimizer step.")
    max_steps: int = config_field(10, "Optimizer steps to run.")
    learning_rate: float = config_field(1e-6, "Peak learning rate.")
    lr_scheduler_type: str = config_field(
        "constant", "LR schedule: constant | linear | cosine | constant_with_warmup | cosine_with_min_lr."
    )
    warmup_steps: int = config_field(0, "Linear warm-up steps.")
    warmup_ratio: float = config_field(0.0, "Warm-up as a share of max_steps (used when warmup_steps is 0).")
    weight_decay: float = config_field(0.0, "AdamW weight decay.")
    max_grad_norm: float = config_field(1.0, "Gradient clipping norm.")
    beta: float = config_field(0.0, "KL coefficient against the reference model (k3 estimator, in the loss).")
    epsilon: float = config_field(0.2, "Lower clip range of the ratio (1 - epsilon).")
    epsilon_high: float = config_field(0.28, "Upper clip range (1 + epsilon_high); adpo widens it per sample.")
    loss_type: str = config_field("dapo", "TRL loss aggregation: grpo | dr_grpo | dapo | bnpo.")
    segments: str = config_field(
        "all",
        "Which context segments of a trimmed trajectory are trained: all (each segment "
        "its own sample, with its turns' advantages) | last (only the final context).",
    )
    dynamic_sampling: bool = config_field(False, "Drop groups whose rewards are all equal and refill with new prompts.")
    max_refill_rounds: int = config_field(
        2, "Dynamic sampling: refill rounds per batch before training on what is left."
    )
    max_completion_length: int = config_field(256, "Cap on a trajectory's completion tokens (model + observation).")
    temperature: float = config_field(1.0, "Sampling temperature during rollouts.")
    # -- episodes ----------------------------------------------------------------------------
    episode_kind: str = config_field("search_r1", "Episode runner: search_r1 (tag-based search tool) | nbagent.")
    corpus_path: str = config_field(
        "", "search_r1: JSONL corpus ({id, contents} or {title, text}) for the BM25 retriever."
    )
    top_k: int = config_field(3, "search_r1: documents per search.")
    search_engine: str = config_field(
        "bm25",
        "Search behind the episodes: bm25 (over corpus_path) | simulated (an LLM "
        "writes the documents, ZeroSearch; set sim_policy).",
    )
    sim_policy: str = config_field(
        "", "simulated: the simulator LLM, as a policy spec (a local model dir, 'openai:URL', 'scripted:NAME' …)."
    )
    sim_p_start: float = config_field(0.0, "simulated: P(noisy documents) at the first step (ZeroSearch p_s).")
    sim_p_end: float = config_field(0.5, "simulated: P(noisy documents) from the last step on (ZeroSearch p_e).")
    sim_b: float = config_field(4.0, "simulated: exponential base b of the curriculum (ZeroSearch eq. 1).")
    sim_total_steps: int = config_field(0, "simulated: m in ZeroSearch eq. 1; 0 = max_steps.")
    max_turns: int = config_field(4, "Model turns per episode.")
    max_turn_tokens: int = config_field(64, "New tokens per model turn.")
    agent_profile: str = config_field("default", "nbagent: sandbox profile name.")
    tools: str = config_field(
        "",
        "nbagent: a tool set by name (built in: search; or one registered with workbench.resolve.register_tool_set).",
    )
    env: str = config_field(
        "",
        "Episodes from an environment instead (episode_kind aside): an env source spec (openenv:…, verifiers:NAME, "
        "or a prefix registered with register_env_source); tasks_path rows are reset arguments; reward='env' pays "
        "the environment's own.",
    )
    harness: str = config_field(
        "",
        "Episodes from your own agent harness instead (episode_kind aside): MODULE:FUNCTION or a name registered with "
        "workbench.gateway.register_harness / @harness; agent(rollout) plays each task through a model gateway in "
        "front of the trained policy, which sets temperature and max_turn_tokens per call whatever the agent asks.",
    )
    concurrency: int = config_field(4, "Episodes run at once (with executor='ray': kernels per worker).")
    executor: str = config_field(
        "local",
        "nbagent: where episodes run: local (kernels here) | ray (kernel workers on a Ray "
        "cluster; the model stays in the trainer; needs pip install 'workbench-rl[ray]').",
    )
    ray_address: str = config_field(
        "", "executor='ray': 'auto' (the cluster `ray start` runs here), HOST:PORT, or '' to start a local one."
    )
    ray_workers: int = config_field(1, "executor='ray': kernel workers to place.")
    # -- bookkeeping -------------------------------------------------------------------------
    seed: int = config_field(0, "Random seed (sampler, sampling, init).")
    save_steps: int = config_field(0, "Save a checkpoint every N steps (0 = only at the end).")
    resume_from: str = config_field("", "Checkpoint dir to resume from, or 'latest' for the newest in output_dir.")
    logging_steps: int = config_field(1, "Log metrics every N steps.")
    device: str = config_field(
        "auto", "Where to train: auto (a CUDA GPU when one is visible, else the CPU) | cpu | cuda."
    )
    bf16: bool = config_field(False, "bf16 mixed precision (a GPU that supports it; weights stay float32).")
    gradient_checkpointing: bool = config_field(
        False, "Recompute activations in the backward pass: less memory for about a third more compute."
    )
    logprob_chunk: int = config_field(
        256,
        "Loss pass: score the trained tokens this many positions at a time, each chunk's logits recomputed "
        "in backward (workbench.train.logprobs); 0 = TRL's fused head, which on a CPU scores every position.",
    )
    heap_mmap_threshold_mib: int = config_field(
        1,
        "Linux/glibc: allocations of at least this many MiB get their own mapping and go back to the OS when "
        "freed (workbench.train.heap), so a step's peak RSS is its live tensors, not heap left by earlier "
        "passes; process-wide, set when the trainer is built. 0 leaves malloc as it is; at most 32.",
    )
    lora_r: int = config_field(
        0, "LoRA rank: > 0 trains a peft LoRA adapter instead of every weight (0 = full fine-tuning)."
    )
    lora_alpha: int = config_field(16, "LoRA: scaling numerator (the update is scaled by lora_alpha / lora_r).")
    lora_dropout: float = config_field(0.0, "LoRA: dropout on the adapter's input, in [0, 1).")
    lora_target_modules: list[str] = config_field(
        [], "LoRA: module names to adapt, e.g. ['q_proj', 'v_proj']; empty = every linear layer but the output head."
    )
    use_vllm: bool = config_field(
        False,
        "Generate rollouts with vLLM (CPU build or CUDA): an in-process engine synced "
        "with the trained weights after every optimizer step (workbench.train.vllm_rollout).",
    )
    vllm_mode: str = config_field(
        "colocate", "vLLM mode: colocate (in-process; CPU or GPU) | server (`vllm serve`, NCCL weight sync: CUDA only)."
    )
    vllm_gpu_memory_utilization: float = config_field(0.3, "Colocate on GPU: share of GPU memory vLLM may take.")
    vllm_kv_cache_gib: int = config_field(1, "Colocate on vLLM's CPU build: KV cache size in GiB.")
    vllm_importance_sampling_correction: bool = config_field(
        False,
        "Correct the gap between vLLM's sampling logprobs and "
        "the trainer's (TRL's truncated/masked importance "
        "sampling). The gap is logged either way "
        "(sampling/logp_gap/mean|max).",
    )
    vllm_importance_sampling_mode: str = config_field(
        "sequence_mask", "IS correction: token_truncate | token_mask | sequence_truncate | sequence_mask (TRL's modes)."
    )
    vllm_importance_sampling_clip_max: float = config_field(
        3.0, "IS correction: upper bound of the ratio (TRL's C_max)."
    )
    # -- overlapped (asynchronous) RL (workbench.train.overlap) --------------------------------
    async_rollouts: bool = config_field(
        False,
        "Keep running episode groups while the trainer trains (AReaL-style), staleness bounded by "
        "admission; the loss applies decoupled PPO's behaviour weight.",
    )
    max_staleness: int = config_field(
        4, "async_rollouts: most optimizer steps between a group's start and the step training on it (k)."
    )
    behaviour_weight_cap: float = config_field(
        5.0, "async_rollouts: cap on pi_prox/pi_behaviour per token (AReaL's default 5)."
    )
    behaviour_cap_action: str = config_field(
        "mask", "async_rollouts: tokens over the cap leave the loss (mask) or keep weight = cap (clamp, TIS-style)."
    )
    async_timeout_s: float = config_field(
        1800.0, "async_rollouts: how long a step waits for its rollouts before the run stops with an error."
    )
    prox: str = config_field(
        "recompute",
        "async_rollouts: pi_prox by a no-grad forward before the update (recompute), or interpolated between "
        "behaviour and current logprobs by each token's policy version (loglinear, AReaL's; no extra forward).",
    )
    report_to: list[str] = config_field(
        [],
        "Logging integrations passed to TRL/transformers, offline: tensorboard "
        "(<output_dir>/tensorboard), trackio (<output_dir>/trackio), or any other "
        "transformers knows (wandb, mlflow ...). metrics.jsonl is always written.",
    )
    extra_grpo_args: dict[str, Any] = config_field({}, "Extra keyword arguments passed to trl.GRPOConfig as is.")
    # the flat names of FLAT_ESTIMATOR_PARAMS: keyword-only aliases, moved into estimator_params (read back
    # as properties, below the class)
    gamma: InitVar[float | None] = None
    adpo_min_scale: InitVar[float | None] = None
    adpo_p_low: InitVar[float | None] = None
    adpo_p_high: InitVar[float | None] = None
    adpo_eps_boost: InitVar[float | None] = None
    asearcher_reward_bias: InitVar[float | None] = None
    asearcher_reward_scaling: InitVar[float | None] = None
    asearcher_reward_clip: InitVar[float | None] = None
    asearcher_adv_norm: InitVar[bool | None] = None
    use_cpu: InitVar[bool | None] = None  # deprecated: device="cpu"

    def __post_init__(self, *flat: Any) -> None:
        use_cpu = flat[-1]
        flat = flat[:-1]
        if use_cpu is not None:
            warnings.warn("TrainConfig.use_cpu is deprecated: use device='cpu'", DeprecationWarning, stacklevel=3)
            if use_cpu:
                self.device = "cpu"
        self.report_to = _report_list(self.report_to)
        check_types(self)
        if isinstance(self.estimator_params, dict):  # a copy: a flat name never edits the caller's dict
            self.estimator_params = {k: dict(v) if isinstance(v, dict) else v for k, v in self.estimator_params.items()}
            for (name, key), value in zip(FLAT_ESTIMATOR_PARAMS.values(), flat, strict=True):
                entry = self.estimator_params.setdefault(name, {}) if value is not None else None
                if isinstance(entry, dict):
                    entry[key] = value
        self.validate()

    def make_estimator(self, name: str | None = None) -> Estimator:
        """The estimator `name` (default: this run's) with its parameters from `estimator_params`."""
        name = self.estimator if name is None else name
        return make_estimator(name, self.estimator_params.get(name))

    def estimator_param(self, name: str, key: str) -> Any:
        """The value of parameter `key` of estimator `name`: as set in `estimator_params`, else its default."""
        return self.make_estimator(name).params()[key]

    # -- checks ------------------------------------------------------------------------------
    def validate(self) -> None:
        if not isinstance(self.estimator_params, dict):
            raise _bad("estimator_params", "give a table of tables: {estimator name: {parameter: value}}")
        for name in self.estimator_params:  # every estimator's parameters are checked, the chosen one's below
            estimator_class(name, where="TrainConfig.estimator_params (keyed by estimator name)")
            self.make_estimator(name)
        chosen = self.make_estimator()
        if self.episode_kind not in EPISODE_KINDS:
            raise _bad("episode_kind", f"{self.episode_kind!r} is not one of {', '.join(EPISODE_KINDS)}")
        if self.device not in DEVICES:
            raise _bad("device", f"{self.device!r} is not one of {', '.join(DEVICES)}")
        if self.executor not in ("local", "ray"):
            raise _bad("executor", f"{self.executor!r} is not 'local' or 'ray'")
        if self.harness and (self.env or self.executor != "local"):
            raise _bad(
                "harness", "plays in the trainer's process, through a model gateway: drop env= and executor='ray'"
            )
        if self.env and self.executor != "local":
            raise _bad("executor", "environment episodes (env=...) run in the trainer's process: executor='local'")
        if self.executor == "ray" and (self.episode_kind != "nbagent" or self.search_engine != "bm25"):
            raise _bad(
                "executor",
                "'ray' runs nbagent episodes with search_engine='bm25' (the other kinds run "
                "no kernels; the simulated search's curriculum lives in the trainer)",
            )
        if self.lr_scheduler_type not in SCHEDULES:
            raise _bad("lr_scheduler_type", f"{self.lr_scheduler_type!r} is not one of {', '.join(SCHEDULES)}")
        if self.vllm_mode not in ("colocate", "server"):
            raise _bad("vllm_mode", "use 'colocate' or 'server'")
        if self.segments not in SEGMENTS:
            raise _bad("segments", f"{self.segments!r} is not one of {', '.join(SEGMENTS)}")
        if self.search_engine not in SEARCH_ENGINES:
            raise _bad("search_engine", f"{self.search_engine!r} is not one of {', '.join(SEARCH_ENGINES)}")
        if self.search_engine == "simulated":
            for name in ("sim_p_start", "sim_p_end"):
                if not 0.0 <= getattr(self, name) <= 1.0:
                    raise _bad(name, "is a probability; use a value in [0, 1]")
            if self.sim_b <= 0:
                raise _bad("sim_b", "the exponential base must be > 0")
        self._validate_training(chosen)

    def _validate_training(self, chosen: Estimator) -> None:
        """The group, batch, schedule, LoRA, vLLM and logging settings (after the estimator, kinds and search)."""
        if self.num_generations < 2:
            raise _bad("num_generations", "must be >= 2 (it is the group size; hrpo groups distinct questions)")
        if self.per_device_train_batch_size % self.num_generations:
            raise _bad(
                "per_device_train_batch_size",
                f"{self.per_device_train_batch_size} is not a multiple of "
                f"num_generations={self.num_generations}; make it one",
            )
        if not 0.0 <= self.warmup_ratio < 1.0:
            raise _bad("warmup_ratio", "must be in [0, 1)")
        if self.max_steps < 1 or self.max_turns < 1 or self.max_completion_length < 1:
            raise _bad("max_steps/max_turns/max_completion_length", "must be >= 1")
        if self.vllm_importance_sampling_mode not in IS_MODES:
            raise _bad(
                "vllm_importance_sampling_mode",
                f"{self.vllm_importance_sampling_mode!r} is not one of {', '.join(IS_MODES)}",
            )
        if self.lora_r < 0 or (self.lora_r and self.lora_alpha <= 0):
            raise _bad("lora_r", "give lora_r >= 0 (0 = no LoRA) and lora_alpha > 0")
        if not 0.0 <= self.lora_dropout < 1.0:
            raise _bad("lora_dropout", "must be in [0, 1)")
        if not 0 <= self.heap_mmap_threshold_mib <= 32:
            raise _bad("heap_mmap_threshold_mib", "give a whole number of MiB from 1 to 32 (glibc's limit), or 0")
        if self.logprob_chunk < 0:
            raise _bad("logprob_chunk", "give a number of positions >= 1, or 0 for TRL's own fused head")
        if self.vllm_kv_cache_gib < 1:
            raise _bad("vllm_kv_cache_gib", "must be a whole number of GiB >= 1")
        if isinstance(self.report_to, str):
            self.report_to = [] if self.report_to in ("", "none") else [self.report_to]
        if not all(isinstance(r, str) and r for r in self.report_to):
            raise _bad("report_to", "list integration names, e.g. ['tensorboard', 'trackio']")
        self._validate_async()
        if self.use_vllm and chosen.group_key is not None and self.vllm_mode == "server":
            raise _bad(
                "vllm_mode",
                f"{self.estimator} groups distinct questions (by {chosen.group_key}), which vLLM server mode "
                "de-duplicates; use vllm_mode='colocate'",
            )

    def _validate_async(self) -> None:
        if self.max_staleness < 0:
            raise _bad("max_staleness", "must be >= 0 (0 runs the producer in lockstep: the synchronous trainer)")
        if self.behaviour_weight_cap <= 1.0:
            raise _bad("behaviour_weight_cap", "must be > 1 (AReaL uses 5)")
        if self.behaviour_cap_action not in CAP_ACTIONS:
            raise _bad("behaviour_cap_action", f"{self.behaviour_cap_action!r} is not one of {', '.join(CAP_ACTIONS)}")
        if self.prox not in PROX_METHODS:
            raise _bad("prox", f"{self.prox!r} is not one of {', '.join(PROX_METHODS)}")
        if self.async_timeout_s <= 0:
            raise _bad("async_timeout_s", "must be > 0 seconds")
        if self.async_rollouts and self.dynamic_sampling:
            raise _bad("dynamic_sampling", "refills a batch synchronously; turn it off with async_rollouts")
        if self.async_rollouts and self.use_vllm and self.vllm_mode != "colocate":
            raise _bad("vllm_mode", "async_rollouts loads weights into an in-process engine; use vllm_mode='colocate'")

    # -- loading -----------------------------------------------------------------------------
    @classmethod
    def fields_help(cls, preset: str | None = None) -> dict[str, str]:
        """Each field's help; with `preset`, the preset's value and its source appended."""
        helps = super().fields_help()
        for flat, (name, key) in FLAT_ESTIMATOR_PARAMS.items():
            helps[flat] = f"{name}: {parameters_help(name)[key]} (the flat name of estimator_params.{name}.{key})"
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
    def config_types(cls) -> dict[str, Any]:
        # each estimator's table is checked by the registry (`validate`), whose errors name the estimator
        return {**super().config_types(), "estimator_params": dict[str, Any]}

    @classmethod
    def accepted_keys(cls) -> set[str]:
        return super().accepted_keys() | set(FLAT_ESTIMATOR_PARAMS) | {"use_cpu"}

    @classmethod
    def _build(cls, data: Mapping[str, Any], where: str) -> Self:
        return super()._build({**data, "report_to": _report_list(data.get("report_to", []))}, where)

    @classmethod
    def _fields_hint(cls) -> str:
        return "see `workbench train --help-config` for the list"

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

    def replace(self, **changes: Any) -> TrainConfig:
        """A copy with `changes` (fields or flat estimator parameter names), validated again."""
        return type(self).from_dict(self.to_dict(), **changes)

    def resolved_device(self) -> str:
        """ "cpu" or "cuda": `device`, with "auto" decided by what this machine has."""
        from workbench.models.load import pick_device

        return pick_device(self.device)

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
            use_cpu=self.resolved_device() == "cpu",
            bf16=self.bf16,
            gradient_checkpointing=self.gradient_checkpointing,
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


def _report_list(report_to: Any) -> Any:
    """`report_to` as a list: one integration's name is a list of one, "" or "none" an empty list."""
    if isinstance(report_to, str):
        return [] if report_to in ("", "none") else [report_to]
    return report_to


def _flat_reader(name: str, key: str) -> property:
    def read(self: TrainConfig) -> Any:
        return self.estimator_param(name, key)

    return property(read, doc=f"estimator_params.{name}.{key}, or its default (read-only)")


def _read_use_cpu(self: TrainConfig) -> bool:
    return self.device == "cpu"


# the flat names read back what they set (`cfg.adpo_min_scale`); a dataclass InitVar keeps no value itself
# and so does the deprecated use_cpu
_READERS = {flat: _flat_reader(name, key) for flat, (name, key) in FLAT_ESTIMATOR_PARAMS.items()}
_READERS["use_cpu"] = property(_read_use_cpu, doc="deprecated: device == 'cpu' (read-only)")
for _attr, _reader in _READERS.items():
    setattr(TrainConfig, _attr, _reader)
if [n for n, f in TrainConfig.__dataclass_fields__.items() if str(f.type).startswith("InitVar")] != [
    *FLAT_ESTIMATOR_PARAMS,
    "use_cpu",
]:  # __post_init__ pairs the InitVars with FLAT_ESTIMATOR_PARAMS by position, then use_cpu
    raise AssertionError("TrainConfig's InitVars must follow FLAT_ESTIMATOR_PARAMS, in order, then use_cpu")

__all__ = ["EPISODE_KINDS", "ESTIMATORS", "FLAT_ESTIMATOR_PARAMS", "SEARCH_ENGINES", "SEGMENTS", "TrainConfig"]

"""Seed papers' training settings as `TrainConfig` presets, each value with where it comes from.

    cfg = TrainConfig.preset("zerosearch", model_path="runs/qwen", tasks_path="nq.jsonl")
    preset_sources("zerosearch")["sim_p_end"]    # 'ZeroSearch App. B: p_e = 0.25 for Qwen-2.5-3B'
    workbench train --preset drzero_solver --help-config      # every field, with its source

A "global batch of P prompts × n rollouts" becomes `per_device_train_batch_size × gradient_accumulation_steps
= P·n` rows per optimizer step (TRL counts completions), split so that one micro-batch holds one
question's rollouts. Where a paper gives two values (e.g. Dr. Zero's learning rate 5e-7 or 1e-6) the
preset takes the one the paper's main runs name first or the code uses, and says so. Settings that no
paper or code fixes are left at `TrainConfig`'s defaults. Presets set GPU precision (bf16) where the
paper trains in it: override `device="cpu", bf16=False` to try one on a CPU.
"""

from __future__ import annotations

from typing import Any

from workbench.errors import ConfigError

DRZ = "Dr. Zero"
DRZ_T5, DRZ_T6 = f"{DRZ} Table 5 (proposer, HRPO)", f"{DRZ} Table 6 (solver, GRPO)"
ZS = "ZeroSearch"
A0 = "Agent0 App. A.1"
AS = "ASearcher"
AS_CFG = "ASearcher code (AReaL/ASearcher/configs/asearcher_local.yaml)"
L0 = "L0"

# name -> field -> (value, source)
PRESETS: dict[str, dict[str, tuple[Any, str]]] = {
    "drzero_proposer": {
        "estimator": ("hrpo", f"{DRZ} §3 eq. 2-3 and {DRZ_T5}: Algorithm HRPO"),
        "reward": ("drzero_proposer", f"{DRZ} §3 eq. 4 and App. B: 0.5·format + difficulty"),
        "max_steps": (50, f"{DRZ_T5}: Steps 50"),
        "learning_rate": (1e-6, f"{DRZ_T5}: Learning Rate 5e-7, 1e-6 (the larger)"),
        "lr_scheduler_type": ("constant_with_warmup", f"{DRZ_T5}: LR Scheduler Constant with Warmup"),
        "warmup_ratio": (0.03, f"{DRZ_T5}: Warmup Ratio 0.03"),
        "weight_decay": (0.01, f"{DRZ_T5}: Weight Decay 0.01"),
        "max_grad_norm": (0.1, f"{DRZ_T5}: Max Gradient Norm 0.1, 1.0 (the first)"),
        "beta": (0.0, f"{DRZ_T5}: KL-Div in HRPO 0"),
        "epsilon": (0.2, f"{DRZ} §3: strictly on-policy, no ratio clipping (one update per batch: ratio = 1)"),
        "epsilon_high": (0.2, f"{DRZ} §3: no ratio clipping; a symmetric bound, inert on-policy"),
        "per_device_train_batch_size": (
            8,
            f"{DRZ_T5}: Total Train Batch Size 256 prompts, group size 1 (8 per micro-batch × 32 accumulation steps)",
        ),
        "gradient_accumulation_steps": (32, f"{DRZ_T5}: 256 = 8 × 32"),
        "num_generations": (
            8,
            f"not in {DRZ}: the hop-group size of the sampler. A random 256-prompt batch at "
            "4:3:2:1 holds ~102/77/51/26 prompts per hop; groups of 8 same-hop prompts keep "
            "the ratio and never leave a prompt alone in its hop group",
        ),
        "max_turns": (5, f"{DRZ_T5}: Max Turn in Rollout 5"),
        "max_completion_length": (
            2560,
            f"{DRZ} code (config/search_multiturn_grpo.yaml): response 2560 of Table 5's Max Sequence Length 4096",
        ),
        "temperature": (1.0, f"{DRZ} code: rollout temperature 1.0"),
        "top_k": (3, f"{DRZ} App. A: top-3 documents per search"),
        "bf16": (True, f"{DRZ_T5}: Precision BF16-mixed"),
        "device": ("auto", f"{DRZ_T5}: trained on GPUs (auto takes one when visible)"),
    },
    "drzero_solver": {
        "estimator": ("grpo", f"{DRZ} §3 eq. 5 and {DRZ_T6}: Algorithm GRPO"),
        "reward": ("drzero_solver", f"{DRZ} App. A: exact match is the instance-level score"),
        "num_generations": (5, f"{DRZ_T6}: Group size in GRPO 5"),
        "per_device_train_batch_size": (
            5,
            f"{DRZ_T6}: Total Train Batch Size 256 prompts × 5 = 1280 rollouts "
            "(one question's 5 per micro-batch × 256 accumulation steps)",
        ),
        "gradient_accumulation_steps": (256, f"{DRZ_T6}: 256 prompts per step"),
        "max_steps": (50, f"{DRZ_T6}: Steps 50"),
        "learning_rate": (1e-6, f"{DRZ_T6}: Learning Rate 1e-6"),
        "lr_scheduler_type": ("constant_with_warmup", f"{DRZ_T6}: LR Scheduler Constant with Warmup"),
        "warmup_ratio": (0.03, f"{DRZ_T6}: Warmup Ratio 0.03"),
        "weight_decay": (0.01, f"{DRZ_T6}: Weight Decay 0.01"),
        "max_grad_norm": (0.1, f"{DRZ_T6}: Max Gradient Norm 0.1, 1.0 (the first)"),
        "beta": (0.0, f"{DRZ_T6}: KL-Div in GRPO 0, 0.001 (the first)"),
        "epsilon": (0.2, f"{DRZ_T6}: ε in GRPO 0.2"),
        "epsilon_high": (0.2, f"{DRZ_T6}: ε in GRPO 0.2 (symmetric clip, eq. 5)"),
        "max_turns": (5, f"{DRZ_T6}: Max Turn in Rollout 5"),
        "temperature": (1.0, f"{DRZ} code: rollout temperature 1.0"),
        "top_k": (3, f"{DRZ} App. A: top-3 documents per search"),
        "bf16": (True, f"{DRZ_T6}: Precision BF16-mixed"),
        "device": ("auto", f"{DRZ_T6}: trained on GPUs (auto takes one when visible)"),
    },
    "zerosearch": {
        "estimator": ("reinforce", f"{ZS} App. B: REINFORCE is the default training algorithm"),
        "reward": ("zerosearch", f"{ZS} §3.5: F1 reward, no format reward"),
        "num_generations": (5, f"{ZS} App. B: five responses sampled per prompt"),
        "per_device_train_batch_size": (5, f"{ZS} App. D: batch size 64 × rollout repetition 5 = 320 rollouts"),
        "gradient_accumulation_steps": (64, f"{ZS} App. D: batch size 64 prompts"),
        "max_steps": (200, f"{ZS} App. D: a total of 200 training steps"),
        "learning_rate": (1e-6, f"{ZS} App. B: policy learning rate 1e-6"),
        "lr_scheduler_type": ("constant_with_warmup", f"{ZS} code (train_reinforce.sh, verl): constant after warm-up"),
        "warmup_ratio": (0.95, f"{ZS} code (train_reinforce.sh): lr_warmup_steps_ratio=0.95"),
        "beta": (0.001, f"{ZS} code (train_reinforce.sh): kl_loss_coef 0.001 (the β of §3.1)"),
        "temperature": (1.0, f"{ZS} code (train_reinforce.sh): rollout temperature 1"),
        "episode_kind": ("search_r1", f"{ZS} §3.2: the Search-R1 template"),
        "max_turns": (5, f"{ZS} code (README commands): MAX_TURNS 5"),
        "top_k": (5, f"{ZS} code (README commands): TOPK 5"),
        "search_engine": ("simulated", f"{ZS} §3.3-3.4: a simulation LLM writes the documents"),
        "sim_p_start": (0.0, f"{ZS} App. B: p_s = 0 for Qwen-2.5-3B"),
        "sim_p_end": (0.25, f"{ZS} App. B: p_e = 0.25 for Qwen-2.5-3B (0.75 for 7B)"),
        "sim_b": (4.0, f"{ZS} §3.4 eq. 1: exponential base b, default 4"),
        "sim_total_steps": (0, f"{ZS} §3.4 eq. 1: m = the total number of training steps"),
    },
    "agent0_executor": {
        "estimator": ("adpo", "Agent0 §3.3 eq. 8: ADPO"),
        "reward": ("exact_match", "Agent0 §3.3: R = 1(o = ỹ) against the majority-vote pseudo-label (the task's gold)"),
        "num_generations": (16, f"{A0}: Number of Rollouts 16"),
        "per_device_train_batch_size": (16, f"{A0}: Global Batch Size 128 prompts × 16 rollouts"),
        "gradient_accumulation_steps": (128, f"{A0}: Global Batch Size 128"),
        "max_steps": (40, f"{A0}: Max Steps 40"),
        "learning_rate": (1e-6, f"{A0}: Learning Rate 1e-6"),
        "weight_decay": (0.01, f"{A0}: Weight Decay 1e-2"),
        "beta": (0.01, f"{A0}: KL Penalty Coefficient 1e-2"),
        "temperature": (1.0, f"{A0}: Rollout Temperature 1.0"),
        "epsilon": (0.2, "Agent0 code (core_algos.py): clip_ratio ε = 0.2"),
        "adpo_min_scale": (0.6, "Agent0 code (train_qwen3_4b_adpo.sh): min_advantage_scale 0.6"),
        "adpo_p_low": (0.3, "Agent0 §4: self-consistency band 0.3-0.8"),
        "adpo_p_high": (0.8, "Agent0 §4: self-consistency band 0.3-0.8"),
        "adpo_eps_boost": (0.1, "Agent0 code (compute_policy_loss_adpo): ε_high = ε + 0.1·clip((0.8-p)/0.5, 0, 1)"),
        "episode_kind": ("nbagent", "Agent0 §3.3: multi-turn tool-integrated rollouts with a code sandbox"),
        "max_turns": (4, "Agent0 code (executor_train): max_turns 4"),
        "bf16": (True, "Agent0: trained on GPUs (verl, bf16)"),
        "device": ("auto", "Agent0: trained on GPUs (auto takes one when visible)"),
    },
    "agent0_curriculum": {
        "estimator": ("grpo", "Agent0 §3.2: the curriculum agent is trained with GRPO (eq. 1)"),
        "reward": ("agent0_paper", "Agent0 §3.2 eq. 5: R_format · max(0, λ_unc R_unc + λ_tool R_tool - R_rep)"),
        "num_generations": (4, f"{A0}: Number of Rollouts 4"),
        "per_device_train_batch_size": (4, f"{A0}: Global Batch Size 128 prompts × 4 rollouts"),
        "gradient_accumulation_steps": (128, f"{A0}: Global Batch Size 128"),
        "max_steps": (5, f"{A0}: Max Steps 5"),
        "learning_rate": (1e-6, f"{A0}: Learning Rate 1e-6"),
        "weight_decay": (0.01, f"{A0}: Weight Decay 1e-2"),
        "beta": (0.01, f"{A0}: KL Penalty Coefficient 1e-2"),
        "temperature": (1.0, f"{A0}: Rollout Temperature 1.0"),
        "epsilon": (0.2, "Agent0 code (EasyR1 defaults): clip ratio low 0.2"),
        "epsilon_high": (0.3, "Agent0 code (EasyR1 defaults): clip ratio high 0.3"),
        "bf16": (True, "Agent0: trained on GPUs (EasyR1, bf16)"),
        "device": ("auto", "Agent0: trained on GPUs (auto takes one when visible)"),
    },
    "asearcher": {
        "estimator": ("asearcher", f"{AS} §3 and code: group-mean centring, (r - 0.5)·10, flat groups dropped"),
        "reward": ("asearcher", f"{AS} §2.3: F1 × format"),
        "num_generations": (16, f"{AS_CFG}: gconfig.n_samples 16"),
        "per_device_train_batch_size": (16, f"{AS} §4: batch size 128 for 7B/14B (× 16 trajectories)"),
        "gradient_accumulation_steps": (128, f"{AS} §4: batch size 128 for 7B and 14B models"),
        "learning_rate": (5e-6, f"{AS_CFG}: actor.optimizer.lr 5e-6"),
        "lr_scheduler_type": ("constant", f"{AS_CFG}: lr_scheduler_type constant"),
        "warmup_ratio": (0.001, f"{AS_CFG}: warmup_steps_proportion 0.001"),
        "weight_decay": (0.01, f"{AS_CFG}: weight_decay 0.01"),
        "max_grad_norm": (1.0, f"{AS_CFG}: gradient_clipping 1.0"),
        "beta": (0.0, f"{AS_CFG}: kl_ctl 0.0"),
        "epsilon": (0.4, f"{AS_CFG}: eps_clip 0.4"),
        "epsilon_high": (0.4, f"{AS_CFG}: eps_clip 0.4 (symmetric)"),
        "temperature": (1.0, f"{AS_CFG}: gconfig.temperature 1.0"),
        "max_turns": (32, f"{AS} §4: turn limit 32 for 7B and 14B models (128 for QwQ)"),
        "max_turn_tokens": (1024, f"{AS_CFG}: gconfig.max_new_tokens 1024"),
        "segments": ("all", f"{AS} code (asearcher.py): every generated sequence of a trajectory is trained"),
        "asearcher_reward_bias": (-0.5, f"{AS_CFG}: reward_bias -0.5"),
        "asearcher_reward_scaling": (10.0, f"{AS_CFG}: reward_scaling 10.0"),
        "asearcher_reward_clip": (20.0, "AReaL PPOActorConfig default: reward_clip 20.0"),
        "asearcher_adv_norm": (True, "AReaL PPOActorConfig default: adv_norm True (global, group_adv_norm False)"),
        "bf16": (True, f"{AS_CFG}: dtype bfloat16"),
        "device": ("auto", f"{AS}: trained on GPUs (auto takes one when visible)"),
        "async_rollouts": (True, f"{AS} §3: fully asynchronous RL (AReaL): rollouts run while the trainer trains"),
        "max_staleness": (4, f"{AS_CFG}: rollout.max_head_offpolicyness 4"),
        "behaviour_weight_cap": (5.0, "AReaL PPOActorConfig default: behav_imp_weight_cap 5.0 (decoupled loss)"),
    },
    "l0": {
        "estimator": ("reinforce_pp", f"{L0} §3 eq. 2-3: REINFORCE++ step returns, batch-step whitening"),
        "reward": ("l0", f"{L0} §3: r_i = 0.8·qa_i + 0.1·format_i + 0.1·code_i per step (code defaults)"),
        "gamma": (0.95, f"{L0} code (trainer.yaml): step_gamma 0.95"),
        "segments": ("all", f"{L0} code (NBAgentSampler): every step is its own training sample"),
        "loss_type": ("dapo", f"{L0} §3 eq. 1: DAPO token-level normalisation"),
        "beta": (0.001, f"{L0} §3: explicit KL penalty; code: kl_loss_coef 0.001 (low_var_kl)"),
        "num_generations": (4, f"{L0} code (scripts): n = 4 rollouts per prompt"),
        "per_device_train_batch_size": (4, f"{L0} code (scripts): 64 prompts × 4 rollouts"),
        "gradient_accumulation_steps": (64, f"{L0} code (scripts): 64 prompts per step"),
        "learning_rate": (1e-6, f"{L0} code (scripts): lr 1e-6"),
        "episode_kind": ("nbagent", f"{L0} §2: the NB-Agent REPL scaffold"),
        "max_turns": (8, f"{L0} code (scripts): max_steps 8 for the 7B model"),
        "bf16": (True, f"{L0}: trained on GPUs (verl, bf16)"),
        "device": ("auto", f"{L0}: trained on GPUs (auto takes one when visible)"),
    },
}


def preset_names() -> list[str]:
    return sorted(PRESETS)


def _get(name: str) -> dict[str, tuple[Any, str]]:
    try:
        return PRESETS[name]
    except KeyError:
        raise ConfigError(f"unknown training preset {name!r}; use one of {', '.join(preset_names())}") from None


def preset_values(name: str) -> dict[str, Any]:
    """{field: value} of a preset."""
    return {k: v for k, (v, _) in _get(name).items()}


def preset_sources(name: str) -> dict[str, str]:
    """{field: where its value comes from} of a preset."""
    return {k: src for k, (_, src) in _get(name).items()}


__all__ = ["PRESETS", "preset_names", "preset_sources", "preset_values"]

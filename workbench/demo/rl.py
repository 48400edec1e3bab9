"""The demo's training hook for `run_drzero`: GRPO on the solver with the iteration's QA set.

The demo's proposer is scripted (it writes questions by really searching the world, with Dr. Zero's
prompt and reward), so only the solver is updated; its GRPO episodes are NB-Agent episodes in
sandboxed kernels sampled from the live weights, scored against the proposer's answers with
`cfg.rl_reward` (L0's answer reward by default: 0.9·EM + 0.1·has_answer).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch

    from workbench.evolve.loop import TrainRequest
    from workbench.policies.base import Policy
    from workbench.train import TrainConfig

from workbench.demo.config import DemoConfig
from workbench.demo.engine import KV_CACHE_GIB


def demo_train_fn(
    model: Any, tokenizer: Any, cfg: DemoConfig, *, on_step: Callable[[str], None] = print, policy: Policy | None = None
):
    """`run_drzero`'s train_fn for the solver; its rollouts sample from the live weights, the trainer's vLLM
    engine (`cfg.engine`), or `policy` (kept in step with the weights by its owner)."""
    from workbench.rewards import resolve_reward
    from workbench.train.run import train

    def train_fn(req: Any) -> dict[str, Any]:
        if req.role != "solver":
            return {"skipped": "the demo's proposer is scripted"}
        if len(req.tasks) < cfg.rl_questions_per_step:
            why = f"only {len(req.tasks)} valid questions, fewer than rl_questions_per_step={cfg.rl_questions_per_step}"
            on_step(f"  iteration {req.iteration}: no GRPO step on the solver: {why}")
            return {"skipped": why}
        rows = cfg.rl_questions_per_step * cfg.rl_generations
        micro = cfg.rl_micro_batch or rows
        config = role_train_config(
            cfg,
            req,
            run_id=req.run_id,
            num_generations=cfg.rl_generations,
            per_device_train_batch_size=micro,
            gradient_accumulation_steps=rows // micro,
            max_steps=cfg.rl_steps_per_iteration,
            learning_rate=cfg.rl_lr,
            lora_r=cfg.rl_lora_r,
            lora_alpha=2 * cfg.rl_lora_r or 16,
            max_completion_length=1024,
            concurrency=cfg.rl_concurrency,
            use_vllm=cfg.engine == "vllm" and policy is None,
            vllm_kv_cache_gib=KV_CACHE_GIB,
        )
        summary = train(
            config,
            tasks=req.tasks,
            episodes=req.episodes,
            model=model,
            tokenizer=tokenizer,
            reward=resolve_reward(cfg.rl_reward),
            store=req.store,
            policy=policy,
        )
        if cfg.rl_lora_r:
            merge_lora_in_place(model)
        on_step(f"  iteration {req.iteration}: {summary['global_step']} GRPO steps on {len(req.tasks)} questions")
        return summary

    return train_fn


def role_train_config(cfg: DemoConfig, req: TrainRequest, **role: Any) -> TrainConfig:
    """A role's RL step in an iteration of the demo: `role`'s sizes and rates, and what every role shares (the
    request's estimator and output dir, sampling temperature, KL coefficient, recomputed activations, a seed
    per iteration, NB-Agent episodes, a log line per step)."""
    from workbench.train import TrainConfig

    return TrainConfig(
        output_dir=str(req.output_dir),
        estimator=req.estimator,
        temperature=cfg.rl_temperature,
        beta=cfg.rl_beta,
        gradient_checkpointing=cfg.rl_gradient_checkpointing,
        logging_steps=1,
        seed=cfg.seed + req.iteration,
        episode_kind="nbagent",
        **role,
    )


def merge_lora_in_place(model: torch.nn.Module) -> None:
    """Fold the LoRA adapter TRL injected into `model` (peft, in place) into its weights and put the
    plain layers back: later stages (solver attempts, evaluation, the next iteration's trainer, which
    adds a fresh adapter) see an ordinary model holding the trained weights."""
    from peft.tuners.lora import LoraLayer

    for name, module in list(model.named_modules()):
        if isinstance(module, LoraLayer):
            module.merge()
            parent, _, child = name.rpartition(".")
            setattr(model.get_submodule(parent), child, module.get_base_layer())
    model.__dict__.pop("peft_config", None)
    for param in model.parameters():
        param.requires_grad_(True)


__all__ = ["demo_train_fn", "merge_lora_in_place"]

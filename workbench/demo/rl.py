"""The demo's training hooks for `run_drzero`: GRPO on the solver, HRPO on a learned proposer.

    train_fn = demo_train_fn(model, tok, cfg)                          # the solver's GRPO; a scripted proposer
    train_fn = proposer_train_fn(p_model, p_tok, cfg, demo_train_fn(model, tok, cfg))   # both roles learning

The solver's GRPO episodes are NB-Agent episodes in sandboxed kernels sampled from the live weights (or the
configured engine), scored against the proposer's answers with `cfg.rl_reward` (L0's answer reward by default:
0.9·EM + 0.1·has_answer). A learned proposer's HRPO (`workbench.train.run.train`, estimator from the request)
takes its rollouts in whole hop groups; each batch is kept per hop count (`hop_stats`: proposals, format score,
difficulty, reward spread), so the demo can print what the proposer learned per iteration and hop.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from workbench.demo.config import DemoConfig
from workbench.demo.pipeline import KV_CACHE_GIB, Printer
from workbench.errors import ConfigError
from workbench.trajectory import Task, Trajectory

if TYPE_CHECKING:
    from pathlib import Path

    import torch

    from workbench.contracts import EpisodeRunner
    from workbench.demo.pipeline import Stages
    from workbench.evolve.loop import TrainFn, TrainRequest
    from workbench.policies.base import Policy
    from workbench.train import TrainConfig
    from workbench.train.lora import RoleAdapters


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
            on_step(f"  iteration {req.iteration}: no {req.estimator.upper()} step on the solver: {why}")
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
        steps = f"{summary['global_step']} {req.estimator.upper()} steps"  # GRPO, or Agent0's ADPO
        on_step(f"  iteration {req.iteration}: {steps} on {len(req.tasks)} questions")
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


def hop_stats(trajs: Sequence[Any]) -> dict[str, dict[str, float]]:
    """Per hop count (and "all"): proposals, mean format score, mean difficulty and the spread
    (max − min) of the reward of scored proposer trajectories (`traj.rewards` from the mode's spec).
    HRPO's advantages in a batch are all zero exactly when every hop's spread is 0."""
    groups: dict[str, list[Any]] = defaultdict(list)
    for t in trajs:
        groups[str(t.hops or 1)].append(t)
        groups["all"].append(t)
    out = {}
    for hop in sorted(groups, key=lambda h: (h == "all", h)):
        ts = groups[hop]
        out[hop] = {
            "proposals": float(len(ts)),
            "format": sum(t.rewards.get("format", 0.0) for t in ts) / len(ts),
            "difficulty": sum(t.rewards.get("difficulty", 0.0) for t in ts) / len(ts),
            "spread": max(float(t.reward or 0.0) for t in ts) - min(float(t.reward or 0.0) for t in ts),
        }
    return out


HopStats = Callable[[Sequence[Any]], dict[str, dict[str, float]]]
"""Per-hop figures of a batch of scored proposer trajectories (`hop_stats`, or more)."""


class RecordedEpisodes:
    """An episode runner that keeps the per-hop scores (`stats`) of every batch it returns."""

    def __init__(self, runner: EpisodeRunner[Policy], stats: HopStats = hop_stats) -> None:
        self.runner, self.stats = runner, stats
        self.batches: list[dict[str, dict[str, float]]] = []

    async def __call__(self, tasks: Sequence[Task], policy: Policy) -> list[Trajectory]:
        trajs = await self.runner(tasks, policy)
        self.batches.append(self.stats(trajs))
        return trajs


def whole_hop_groups(tasks: Sequence[Any], group: int) -> tuple[list[Any], list[int]]:
    """The tasks whose hop count has at least `group` tasks (HRPO's hop groups), and the hop counts left out."""
    counts = Counter(t.metadata.get("hops") for t in tasks)
    kept = [t for t in tasks if counts[t.metadata.get("hops")] >= group]
    return kept, sorted(h for h, n in counts.items() if n < group)


def hrpo_micro_batch(cfg: DemoConfig) -> int:
    """Rows per HRPO micro-batch: whole hop groups, dividing the step's rows (a ConfigError names the fix)."""
    batch, group = cfg.proposer_rl_batch, cfg.proposer_hop_group
    micro = cfg.proposer_rl_micro_batch or batch
    if batch % micro or micro % group:
        raise ConfigError(
            f"proposer_rl_micro_batch={micro} must divide proposer_rl_batch={batch} and be a multiple of "
            f"proposer_hop_group={group}: set it to e.g. {group}"
        )
    return micro


def hrpo_config(cfg: DemoConfig, req: TrainRequest) -> TrainConfig:
    """The proposer's HRPO step: `proposer_rl_batch` rollouts in hop groups (`num_generations`), accumulated over
    micro-batches of whole groups."""
    micro = hrpo_micro_batch(cfg)
    return role_train_config(
        cfg,
        req,
        run_id=f"{req.run_id}/proposer",
        num_generations=cfg.proposer_hop_group,
        per_device_train_batch_size=micro,
        gradient_accumulation_steps=cfg.proposer_rl_batch // micro,
        max_steps=cfg.proposer_rl_steps,
        learning_rate=cfg.proposer_rl_lr,
        max_completion_length=cfg.proposer_context_tokens,
    )


def proposer_train_fn(
    model: Any,
    tokenizer: Any,
    cfg: DemoConfig,
    solver_fn: TrainFn,
    *,
    on_step: Printer = print,
    stats: HopStats = hop_stats,
    policy: Policy | None = None,
) -> TrainFn:
    """`run_drzero`'s train_fn: HRPO on the proposer model (rollouts from the live weights, or `policy`), `solver_fn`
    (GRPO) for the solver; `stats` gives the per-hop figures kept of each batch of HRPO rollouts. With an estimator
    that groups rollouts of one prompt (Agent0's GRPO, `run_agent0`), a step takes `proposer_rl_batch` rollouts of
    `proposer_rl_batch / proposer_hop_group` prompts instead of hop groups."""
    from workbench.train.estimators import estimator_class
    from workbench.train.run import train

    def train_fn(req: TrainRequest) -> dict[str, Any] | None:
        if req.role == "solver":
            return solver_fn(req)
        group, batch = cfg.proposer_hop_group, cfg.proposer_rl_batch
        left_out: list[int] = []
        if estimator_class(req.estimator).group_key is None:  # groups of one prompt's rollouts: any prompts
            tasks, needed = list(req.tasks), batch // group
            why = f"only {len(tasks)} prompts, fewer than {needed} groups of {group} rollouts"
        else:
            (tasks, left_out), needed = whole_hop_groups(req.tasks, group), batch
            why = f"only {len(tasks)} prompts in hop groups of {group}"
        if len(tasks) < needed:
            return {"skipped": why}
        runner = RecordedEpisodes(req.episodes, stats)
        config = hrpo_config(cfg, req)
        summary = train(
            config,
            tasks=tasks,
            episodes=runner,
            model=model,
            tokenizer=tokenizer,
            reward=req.reward,
            store=req.store,
            policy=policy,
        )
        on_step(
            f"  iteration {req.iteration}: {summary['global_step']} {req.estimator.upper()} steps on the proposer "
            f"({len(tasks)} prompts"
            + (f"; hop {left_out} left out: fewer than {group} prompts" if left_out else "")
            + ")"
        )
        return {**summary, "rollouts": runner.batches, "hops_left_out": left_out}

    return train_fn


ROLES = ("solver", "proposer")  # a pretrained model with a learned proposer: one LoRA adapter per role


def adapter_sft(
    st: Stages, adapters: RoleAdapters, role: str, tok: Any, data: list, epochs: int, key: str
) -> tuple[Path, list[float]]:
    """SFT of `role`'s adapter on `data`, cached under `cache/<role>-adapter-<key>`; its dir and losses."""
    import json

    from workbench.train.sft import sequences, sft

    c = st.cfg
    path = st.cache / f"{role}-adapter-{key}-{c.key('sft_lora_r', 'sft_lr', 'sft_batch_size')}-e{epochs}"
    losses_file = path / "sft_losses.json"
    if losses_file.exists():
        adapters.load(role, path)
    else:
        adapters.activate(role)
        model = adapters.model
        losses = sft(model, tok, data, epochs=epochs, lr=c.sft_lr, batch_size=c.sft_batch_size, seed=c.seed)
        adapters.save(role, path)
        losses_file.write_text(json.dumps(losses))
    losses = json.loads(losses_file.read_text())
    rows = len(sequences(data))  # an episode trimmed to fit its window is several sequences
    st.out(
        f"  {role}: {len(data)} episodes ({rows} sequences), {len(losses)} SFT steps, "
        f"loss {losses[0]:.3f} → {losses[-1]:.4f}"
    )
    return path, list(losses)


__all__ = [
    "ROLES",
    "HopStats",
    "RecordedEpisodes",
    "adapter_sft",
    "demo_train_fn",
    "hop_stats",
    "hrpo_config",
    "hrpo_micro_batch",
    "merge_lora_in_place",
    "proposer_train_fn",
    "role_train_config",
    "whole_hop_groups",
]

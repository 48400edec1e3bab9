"""The proposer's HRPO step in `--proposer learned`: rollouts in whole hop groups, per-hop figures of each batch.

`proposer_train_fn` is `run_drzero`'s train_fn for both roles: HRPO (`workbench.train.run.train`, estimator
from the request) on the proposer's model, the solver's GRPO hook for the solver. Each batch of HRPO rollouts is
kept per hop count (`hop_stats`: proposals, format score, difficulty, reward spread), so the demo can print what
the proposer learned per iteration and hop.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from workbench.demo.config import DemoConfig
from workbench.demo.pipeline import Printer
from workbench.errors import ConfigError
from workbench.trajectory import Task, Trajectory

if TYPE_CHECKING:
    from workbench.contracts import EpisodeRunner
    from workbench.evolve.loop import TrainFn, TrainRequest
    from workbench.policies.base import Policy
    from workbench.train import TrainConfig


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
    from workbench.demo.rl import role_train_config

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
    (GRPO) for the solver; `stats` gives the per-hop figures kept of each batch of HRPO rollouts."""
    from workbench.train.run import train

    def train_fn(req: TrainRequest) -> dict[str, Any] | None:
        if req.role == "solver":
            return solver_fn(req)
        group = cfg.proposer_hop_group
        tasks, left_out = whole_hop_groups(req.tasks, group)
        batch = cfg.proposer_rl_batch
        if len(tasks) < batch:
            return {"skipped": f"only {len(tasks)} prompts in hop groups of {group}"}
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
            f"  iteration {req.iteration}: {summary['global_step']} HRPO steps on the proposer "
            f"({len(tasks)} prompts"
            + (f"; hop {left_out} left out: fewer than {group} prompts" if left_out else "")
            + ")"
        )
        return {**summary, "rollouts": runner.batches, "hops_left_out": left_out}

    return train_fn


__all__ = [
    "HopStats",
    "RecordedEpisodes",
    "hop_stats",
    "hrpo_config",
    "hrpo_micro_batch",
    "proposer_train_fn",
    "whole_hop_groups",
]

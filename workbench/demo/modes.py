"""The demo's self-evolution mode (`DemoConfig.mode`): Dr. Zero (`make demo`) or Agent0 (`--mode agent0`).

    config = evolve_config(st)                        # a DrZeroConfig or an Agent0Config at the demo's sizes
    result = run_mode(st, config, proposer_policy=p, solver_policy=s, train_fn=fn)
    rows = iteration_rows(st, result)                 # summary.json's "evolution" rows
    lines = mode_lines(st, rows)                      # what the self-evolution stage prints

Agent0 (`workbench.evolve.agent0_mode`) at the demo's sizes: Agent0's values (App. A.1, README) vs the demo's.

| Agent0Config        | Agent0   | the demo (`DemoConfig`, the --mode agent0 presets)        |
|---------------------|----------|-----------------------------------------------------------|
| solver_attempts     | 10       | `solver_attempts`: 4, a smoke run 3                       |
| solver_group_size   | 16       | `rl_generations`: 4 (the executor's ADPO group)           |
| proposer_group_size | 4        | `proposer_hop_group`: 2 (a learned proposer's GRPO group) |
| p_low, p_high       | 0.3, 0.8 | `agent0_p_low`, `agent0_p_high`: the same                 |
| uncertainty_form    | paper    | `agent0_reward`: paper (agent0_paper) or code (agent0)    |

Each question's curriculum reward comes from the solver's attempts at it (agent0_paper: R_format·max(0, R_unc +
0.6·R_tool − R_rep): self-consistency, tool calls, repetition in the batch); the QA set keeps the questions whose
majority-vote share p lies in the band, labelled with the vote (a pseudo-label); the executor trains on them with
ADPO (GRPO advantages scaled by s(p), a wider upper clip at low p), rewarded by `rl_reward` (the presets:
agent0_executor, exact match with the pseudo-label). Dr. Zero's rows and lines are `make demo`'s, unchanged.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

from workbench.demo.report import evolution_lines

if TYPE_CHECKING:
    from workbench.demo.config import DemoConfig
    from workbench.evolve.config import DrZeroConfig, EvolveConfig
    from workbench.evolve.loop import EvolveResult
    from workbench.search.hits import Retriever
    from workbench.worlds import World


class ModeStages(Protocol):
    """What a mode reads of `workbench.demo.pipeline.Stages`: the config, the world, its retriever, the Dr. Zero
    config of the demo's sizes."""

    @property
    def cfg(self) -> DemoConfig: ...
    @property
    def world(self) -> World: ...
    @property
    def retriever(self) -> Retriever: ...
    def drzero_config(self, *stale: str, **fields: Any) -> DrZeroConfig: ...


# What the Dr. Zero config of the demo sets (`Stages.drzero_config`); an Agent0Config takes the same values.
SHARED = (
    "run_dir",
    "iterations",
    "prompts_per_iteration",
    "samples_per_prompt",
    "solver_attempts",
    "solver_group_size",
    "hop_weights",
    "concurrency",
    "seed",
    "solver_agent",
)

AGENT0_TITLES: dict[tuple[str, str], tuple[str, str, str]] = {
    ("tiny", "scripted"): (
        "workbench CPU demo, Agent0 mode: world seed {seed} ({passages} passages), run dir {run}",
        "5. self-evolution, Agent0: scripted proposer, curriculum reward + ADPO on the solver (pseudo-labels)",
        "6. held-out accuracy after RL (greedy)",
    ),
    ("tiny", "learned"): (
        "workbench CPU demo, Agent0 mode, both roles learning: world seed {seed} ({passages} passages), run dir {run}",
        "5. self-evolution, Agent0: GRPO on the curriculum reward for the proposer, ADPO on the solver",
        "6. held-out accuracy after RL (greedy)",
    ),
    ("pretrained", "scripted"): (
        "workbench demo with SmolLM2-135M-Instruct, Agent0 mode: world seed {seed}, {eval_tasks} held-out questions",
        "4. self-evolution, Agent0: scripted proposer, curriculum reward + ADPO on the solver (pseudo-labels)",
        "5. held-out accuracy after RL (greedy)",
    ),
    ("pretrained", "learned"): (
        "workbench demo, Agent0 mode, both roles learning on SmolLM2-135M-Instruct: world seed {seed}, run dir {run}",
        "3. self-evolution, Agent0: GRPO on the proposer's adapter (curriculum reward), ADPO on the solver's",
        "4. held-out accuracy after RL (greedy)",
    ),
}
"""`pipeline.TITLES` for `--mode agent0`."""


def evolve_config(st: ModeStages, *stale: str, **fields: Any) -> EvolveConfig:
    """The demo's config of `cfg.mode`: `st.drzero_config(*stale, **fields)`, or an `Agent0Config` with its shared
    values, the band and the curriculum reward from the DemoConfig, then `fields`."""
    if st.cfg.mode == "drzero":
        return st.drzero_config(*stale, **fields)
    from workbench.evolve import Agent0Config

    c = st.cfg
    drzero = st.drzero_config(*stale)
    shared = {name: getattr(drzero, name) for name in SHARED}
    agent0 = {"p_low": c.agent0_p_low, "p_high": c.agent0_p_high, "uncertainty_form": c.agent0_reward}
    return Agent0Config(**{**shared, **agent0, **fields})


def run_mode(st: ModeStages, config: EvolveConfig, **kwargs: Any) -> EvolveResult:
    """`run_drzero` or `run_agent0` over the demo's world and retriever (`kwargs`: policies, train_fn)."""
    from workbench.evolve import run_agent0, run_drzero

    run: Any = run_agent0 if st.cfg.mode == "agent0" else run_drzero
    return run(config, corpus=st.world.corpus(), retriever=st.retriever, **kwargs)


def iteration_rows(st: ModeStages, result: EvolveResult) -> list[dict[str, Any]]:
    """Per iteration: the QA set's size and the mode's metrics (`make demo`'s rows); Agent0's also the executor's
    update (its ADPO summary, or why it was skipped)."""
    rows = [{"iteration": it.iteration, "qa_size": it.qa_size, **it.metrics} for it in result.iterations]
    if st.cfg.mode == "agent0":
        for row, it in zip(rows, result.iterations, strict=True):
            row["solver_update"] = it.training.get("solver", {})
    return rows


def mode_lines(st: ModeStages, rows: Sequence[dict[str, Any]]) -> list[str]:
    """What the self-evolution stage prints per iteration and hop: `evolution_lines`, or `agent0_lines`."""
    return agent0_lines(rows) if st.cfg.mode == "agent0" else evolution_lines(rows)


def mode_report(st: ModeStages, evolution: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """summary.json's figures of the mode: none for Dr. Zero (`make demo`'s summary), Agent0's per iteration."""
    if st.cfg.mode != "agent0":
        return {}
    return {"agent0_per_iteration": agent0_summary(evolution)}


PER_HOP = ("proposer_reward", "self_consistency", "uncertainty", "solver_pass_rate", "question_mix")


def _per_hop(row: dict[str, Any]) -> dict[str, dict[str, float]]:
    """{hop: {figure: value}} of an Agent0 metrics row (`PER_HOP`; 0.0 where a hop has none)."""
    hops = sorted({k.rsplit("hop", 1)[1] for k in row if "/hop" in k}, key=int)
    return {h: {name: float(row.get(f"evolve/{name}/hop{h}", 0.0)) for name in PER_HOP} for h in hops}


def _update(row: dict[str, Any]) -> str:
    update = row.get("solver_update") or {}
    if "skipped" in update:
        return f"no ADPO step ({update['skipped']})"
    return f"{update.get('global_step', 0)} ADPO steps"


def agent0_lines(rows: Sequence[dict[str, Any]]) -> list[str]:
    """Per iteration: the QA set (questions in the band), the curriculum reward and the executor's update; per
    hop: the question mix, curriculum reward, self-consistency, uncertainty term and the solver's pass rate."""
    lines = []
    for it in rows:
        lines.append(
            f"  iteration {it['iteration']}: {it['qa_size']} questions in the QA set "
            f"(in the band: {it.get('evolve/in_band_rate', 0.0):.0%} of the answered valid ones), curriculum reward "
            f"{it.get('evolve/proposer_reward', 0.0):.3f}, {_update(it)}"
        )
        for h, v in _per_hop(it).items():
            lines.append(
                f"    hop {h}: mix {v['question_mix']:5.1%}  curriculum reward {v['proposer_reward']:.3f}  "
                f"self-consistency {v['self_consistency']:.2f}  uncertainty {v['uncertainty']:.2f}  "
                f"solver pass rate {v['solver_pass_rate']:5.1%}"
            )
    return lines


def agent0_hop_stats(trajs: Sequence[Any]) -> dict[str, dict[str, float]]:
    """`rl.hop_stats` for Agent0: per hop count (and "all") of a batch of scored proposer episodes, how many, the
    mean curriculum reward, the mean uncertainty term and the reward's spread (max − min)."""
    groups: dict[str, list[Any]] = {}
    for t in trajs:
        groups.setdefault(str(t.hops or 1), []).append(t)
        groups.setdefault("all", []).append(t)
    out = {}
    for hop in sorted(groups, key=lambda h: (h == "all", h)):
        rewards = [float(t.reward or 0.0) for t in groups[hop]]
        out[hop] = {
            "proposals": float(len(rewards)),
            "reward": sum(rewards) / len(rewards),
            "uncertainty": sum(t.rewards.get("agent0.uncertainty", 0.0) for t in groups[hop]) / len(rewards),
            "spread": max(rewards) - min(rewards),
        }
    return out


def proposer_update_lines(rows: Sequence[dict[str, Any]]) -> list[str]:
    """A learned proposer's GRPO update per iteration: its episodes' curriculum reward, first batch → last."""
    lines = []
    for it in rows:
        update = it.get("proposer_update") or {}
        batches = update.get("rollouts") or []
        if not batches:
            lines.append(f"  iteration {it['iteration']}: no proposer update ({update.get('skipped', 'none')})")
            continue
        first, last = batches[0].get("all", {}), batches[-1].get("all", {})
        lines.append(
            f"  iteration {it['iteration']}: proposer GRPO update, curriculum reward {first.get('reward', 0.0):.3f}"
            f" → {last.get('reward', 0.0):.3f}, uncertainty {first.get('uncertainty', 0.0):.2f} → "
            f"{last.get('uncertainty', 0.0):.2f}"
        )
    return lines


def agent0_summary(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The figures `agent0_lines` prints, as rows for summary.json (the curriculum reward is `proposer_reward`)."""
    out = []
    for it in rows:
        out.append(
            {
                "iteration": it["iteration"],
                "qa_size": it["qa_size"],
                "curriculum_reward": it.get("evolve/proposer_reward", 0.0),
                "valid_rate": it.get("evolve/valid_rate", 0.0),
                "in_band_rate": it.get("evolve/in_band_rate", 0.0),
                "repetition": it.get("evolve/repetition", 0.0),
                "solver_pass_rate": it.get("evolve/solver_pass_rate", 0.0),
                "per_hop": _per_hop(it),
                "solver_update": _update(it),
                "proposer_update": (it.get("proposer_update") or {}).get("rollouts", []),
            }
        )
    return out


__all__ = [
    "AGENT0_TITLES",
    "PER_HOP",
    "SHARED",
    "ModeStages",
    "agent0_hop_stats",
    "agent0_lines",
    "agent0_summary",
    "evolve_config",
    "iteration_rows",
    "mode_lines",
    "mode_report",
    "proposer_update_lines",
    "run_mode",
]

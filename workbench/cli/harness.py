"""`--harness SPEC` on `workbench run`, `eval` and `train`: your own agent, played through a model gateway.

    workbench run --harness my_pkg.agents:solve --tasks tasks.jsonl --policy transformers:MODEL --out runs/mine
    workbench eval --harness my_agent --plugin my_lab.plugins --dataset qa.jsonl --policy transformers:MODEL
    workbench train train.toml --harness my_pkg.agents:solve       # sets TrainConfig.harness

SPEC is MODULE:FUNCTION or a name registered with `workbench.gateway.register_harness` (a `--plugin`
module's `register()` can make one). The agent gets each task as a rollout of a `ModelGateway` in front of
the `--policy` policy (`HarnessEpisodes`); its trajectories are scored with the reward and written to the
run directory's store as NB-Agent's are.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from workbench.gateway import HarnessEpisodes
    from workbench.trajectory import Trajectory

HARNESS_HELP = (
    "play your own agent instead of NB-Agent: MODULE:FUNCTION (agent(rollout), async or plain, importable here) or "
    "a name registered with workbench.gateway.register_harness / @harness (e.g. from a --plugin module)"
)


def add_harness_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument("--harness", metavar="MODULE:FUNCTION|NAME", help=HARNESS_HELP)


def check_harness_args(args: argparse.Namespace) -> None:
    """Refuse flags `--harness` cannot honour: an environment, or kernels on a Ray cluster."""
    from workbench.errors import ConfigError

    if getattr(args, "env", None):
        raise ConfigError("--harness and --env each pick where episodes come from: give one of them")
    if getattr(args, "executor", "local") != "local":
        raise ConfigError("--harness plays in this process, through a model gateway: drop --executor ray")


def harness_runner(spec: str, *, temperature: float | None, concurrency: int, run_id: str = "") -> HarnessEpisodes:
    """`HarnessEpisodes` of the agent `spec` names; with `temperature`, every call samples at it (top_p 1)
    whatever the agent asks (both recorded), else as the agent asks."""
    from workbench.gateway import GatewayConfig, HarnessEpisodes, TrainingSampling, resolve_harness

    agent = resolve_harness(spec, where="--harness")
    sampling = None if temperature is None else TrainingSampling(temperature=temperature)
    return HarnessEpisodes(agent, config=GatewayConfig(training=sampling), concurrency=concurrency, run_id=run_id)


def harness_summary(trajectories: list[Trajectory]) -> str:
    """ "N rollouts (E errors), C calls, F forks" over a batch of harness trajectories."""
    calls = sum(len(t.metadata.get("gateway", {}).get("calls", [])) for t in trajectories)
    forks = sum(sum(t.metadata.get("gateway", {}).get("forks", {}).values()) for t in trajectories)
    errors = sum(t.termination == "error" for t in trajectories)
    return f"{len(trajectories)} rollouts ({errors} ended in an error), {calls} model calls, {forks} forks"


__all__ = ["HARNESS_HELP", "add_harness_argument", "check_harness_args", "harness_runner", "harness_summary"]

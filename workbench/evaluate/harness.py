"""`evaluate`: run the solver over a QA set and report the field's metrics.

    report = evaluate(tasks, policy, tools=registry, k=1, store=Store("runs/eval"))   # greedy
    print(report.table())          # per dataset and hop count: em, cover_em, f1, avg@k, pass@k
    report.save("runs/eval/eval.json")

Greedy by default (temperature 0, k = 1), as the seeds evaluate. k > 1 samples each question k
times at `temperature` (1.0 unless given). `judge(question, prediction, golds) -> float` adds an
LLM-as-judge column: pass any callable, e.g. one that asks a model through `OpenAIPolicy`.

Every trajectory is stored with its metrics as rewards (`em`, `cover_em`, `f1`, `judge` when a
judge is given; "total" = EM; spec name "eval"), so viewers and reward tuners see them. Agent
settings the policy's model carries fill the fields `config` does not set (see `AgentConfig`).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from workbench.agent.config import AgentConfig
from workbench.agent.runner import NBAgent
from workbench.contracts import TrajectoryStore
from workbench.errors import ConfigError
from workbench.evaluate.metrics import EvalRewards, Judge, answer_scores, as_rewards, summarize
from workbench.trajectory import Task, Trajectory

if TYPE_CHECKING:
    from workbench.agent.executor import Executor
    from workbench.agent.local import ToolSet
    from workbench.contracts import EpisodeRunner
    from workbench.policies.base import Policy


@dataclasses.dataclass
class EvalReport:
    rows: list[dict[str, Any]]
    k: int
    trajectories: list[Trajectory]

    def table(self) -> Any:
        import pandas as pd

        return pd.DataFrame(self.rows)

    def overall(self, metric: str = "em") -> float:
        rows = [r for r in self.rows if r["hops"] == "all"]
        total = sum(r["questions"] for r in rows)
        return sum(float(r[metric]) * r["questions"] for r in rows) / max(total, 1)

    def format(self) -> str:
        table = self.table()
        return "no results" if table.empty else table.to_string(index=False, float_format=lambda v: f"{v:.3f}")

    def save(self, path: str | Path) -> Path:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"k": self.k, "rows": self.rows}, indent=2))
        return path


def evaluate(
    tasks: Sequence[Task],
    policy: Policy,
    *,
    tools: ToolSet | None = None,
    k: int = 1,
    temperature: float | None = None,
    config: AgentConfig | None = None,
    store: TrajectoryStore | None = None,
    judge: Judge | None = None,
    concurrency: int = 4,
    progress: bool = True,
    normalizer: str = "squad",
    executor: Executor | None = None,
    episodes: EpisodeRunner[Policy] | None = None,
) -> EvalReport:
    """Run `k` attempts per task and summarise (see the module docstring). `executor`: where the
    episodes run (it holds the tools then; default: local kernels with `tools`). `episodes`: another
    episode runner plays them instead of NB-Agent (e.g. `HarnessEpisodes`, your own agent through a model
    gateway), sampling as it was built (`temperature`, `config` and `tools` are NB-Agent's); its
    trajectories are scored and stored here as NB-Agent's are."""
    if k < 1:
        raise ConfigError(f"k must be >= 1, got {k}")
    if temperature is None:
        temperature = 0.0 if k == 1 else 1.0
    if k > 1 and temperature == 0.0:
        raise ConfigError("k > 1 greedy attempts are identical; pass temperature > 0 for Avg@k / Pass@k")
    base = config or AgentConfig()
    config = base.model_copy(update={"temperature": temperature})
    attempts = [task for task in tasks for _ in range(k)]
    scorer = EvalRewards(normalizer)
    if episodes is not None:
        trajectories = _play(episodes, attempts, policy, scorer, store)
    else:
        trajectories = NBAgent(
            policy,
            tools=tools,
            config=config,
            store=store,
            concurrency=concurrency,
            role="eval",
            reward_spec=scorer,
            executor=executor,
        ).run(attempts, progress=progress)
    scores = None
    if judge is not None:  # judged after the run (a judge may be a model call), then stored with the rest
        scores = {t.id: answer_scores(t, normalizer, judge) for t in trajectories}
        for traj in trajectories:
            if traj.task.golden_answers:
                _record(store, traj, as_rewards(scores[traj.id]), scorer.name)
    return EvalReport(summarize(trajectories, k=k, normalizer=normalizer, scores=scores), k, trajectories)


def _play(
    episodes: EpisodeRunner[Policy],
    attempts: list[Task],
    policy: Policy,
    scorer: EvalRewards,
    store: TrajectoryStore | None,
) -> list[Trajectory]:
    """`episodes`' trajectories of `attempts`, each scored by `scorer` and written to `store` once."""
    from workbench.agent.recorder import Recorder
    from workbench.kernel.sync import run_sync

    recorder = Recorder(store)
    return [recorder.record(traj, scorer) for traj in run_sync(episodes(attempts, policy))]


def _record(store: TrajectoryStore | None, traj: Trajectory, rewards: dict[str, float], name: str) -> None:
    traj.rewards, traj.reward_spec = rewards, name
    if store is not None:
        store.record_rewards(traj.id, rewards, name, provenance={"reason": "evaluation metrics with the judge"})


__all__ = ["EvalReport", "evaluate"]

"""The band: per hop count, the share of questions a solver answers right in some but not all of n attempts.

    from workbench.evolve.band import measure_band

    report = measure_band(questions, solver_policy, n=5, solver_config=AgentConfig(temperature=1.0, top_p=0.95),
                          tools=solver_tools(retriever), store_dir="runs/band")
    for row in report.rows:                  # one per hop count, then "all"
        print(row.hops, row.valid, row.in_band, row.share, row.low, row.high, row.mean_difficulty)
    print(report.line())                     # band share: 25% [10%, 50%] (16 questions, n=5)

Dr. Zero's difficulty reward `1(0<k<n)·(n−k)/(n−1)` is 0 for a question the solver answers in all n attempts
or in none: only questions in the band (0 < k < n) carry a learning signal to the proposer. This plays the
attempts exactly as self-evolution does (`Phases.attempt`: n solver episodes per question, role "solver",
scored with `drzero_solver` and recorded in the store), counts k from the attempts' answers
(`scoring.attach_attempts`: exact match against the gold answers) and scores each question with
`rewards.drzero.difficulty_score`.

A question is a `Task` with `metadata["hops"]` and gold answers; it is valid when it has a question and a gold
answer and `metadata.get("valid", True)` (a proposer's invalid question is counted, never attempted). Each row's
share is in band / valid, with a 95% Wilson interval (`workbench.evaluate.intervals.wilson`); its mean difficulty
is over the valid questions. `report.sampling` says what the attempts sampled with and where each value came
from: the episode's `AgentConfig`, the model's stored agent settings, the model card (its
`generation_config.json`, as the policy reads it) or workbench's default.
"""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from workbench.agent.config import AgentConfig, policy_settings, with_model_settings
from workbench.errors import ConfigError
from workbench.evaluate.intervals import wilson
from workbench.evolve.phases import Phases, Proposed
from workbench.evolve.proposer import Proposal
from workbench.evolve.scoring import attach_attempts
from workbench.kernel.sync import run_sync
from workbench.policies.base import Policy, SamplingParams
from workbench.policies.sampling import WORKBENCH_SAMPLING, SamplingDefaults
from workbench.rewards.drzero import difficulty_score
from workbench.rewards.spec import RewardSpec
from workbench.trajectory import Task, Trajectory

if TYPE_CHECKING:
    from workbench.agent.executor import Executor
    from workbench.agent.local import ToolSet


@dataclass(frozen=True)
class BandRow:
    """One hop count's figures (`hops` "all" for every question)."""

    hops: str
    questions: int
    valid: int
    in_band: int  # valid questions with 0 < k < n
    share: float  # in_band / valid (0 with none valid)
    low: float  # 95% Wilson interval of the share
    high: float
    mean_difficulty: float  # Dr. Zero's difficulty, mean over the valid questions
    pass_rate: float  # right attempts / attempts, over the valid questions


@dataclass
class BandReport:
    """The rows per hop and in all, each question's k, the sampling applied and n."""

    rows: list[BandRow]
    n: int
    sampling: dict[str, dict[str, Any]]  # field -> {"value", "source"}
    questions: list[dict[str, Any]] = field(default_factory=list)  # id, hops, question, answer, valid, k, difficulty

    @property
    def all(self) -> BandRow:
        return self.rows[-1]

    def line(self) -> str:
        """`band share: X% [LO, HI] (N questions, n=5)`, for scripts (N: the valid questions)."""
        a = self.all
        return f"band share: {a.share:.0%} [{a.low:.0%}, {a.high:.0%}] ({a.valid} questions, n={self.n})"

    def table(self) -> str:
        """The rows as an aligned text table."""
        lines = [f"{'hops':>4} {'questions':>9} {'valid':>5} {'in band':>7} {'share':>6} {'95% interval':>14} "
                 f"{'difficulty':>10} {'pass':>5}"]  # fmt: skip
        for r in self.rows:
            lines.append(
                f"{r.hops:>4} {r.questions:>9} {r.valid:>5} {r.in_band:>7} {r.share:>6.0%} "
                f"{f'[{r.low:.0%}, {r.high:.0%}]':>14} {r.mean_difficulty:>10.3f} {r.pass_rate:>5.0%}"
            )
        return "\n".join(lines)


def is_valid(task: Task) -> bool:
    """A question, a gold answer, and not marked invalid by its proposer (`metadata["valid"]`)."""
    return bool(task.question.strip() and task.golden_answers and task.metadata.get("valid", True))


def applied_sampling(
    policy: Policy, config: AgentConfig, episode_source: str | Mapping[str, str] = "the episode's AgentConfig"
) -> dict[str, dict[str, Any]]:
    """What an episode with `config` samples with on `policy`, and where each value comes from; a value the
    episode sets is from `episode_source` (one name, or one per field)."""

    def episode(name: str) -> str:
        if isinstance(episode_source, str):
            return episode_source
        return episode_source.get(name, "the episode's AgentConfig")

    merged, taken = with_model_settings(config, policy_settings(policy))
    defaults = getattr(policy, "sampling_defaults", None) or SamplingDefaults()
    chosen = defaults.choose(SamplingParams(temperature=merged.temperature, top_p=merged.top_p, top_k=merged.top_k))
    out: dict[str, dict[str, Any]] = {}
    for name in ("temperature", "top_p", "top_k"):
        if name in taken:
            source = "the model's agent settings (config.json workbench_agent)"
        elif getattr(merged, name) is not None:
            source = episode(name)
        elif getattr(defaults, name) is not None:
            source = "the model card (generation_config.json)"
        else:
            source = f"workbench's default ({getattr(WORKBENCH_SAMPLING, name)})"
        out[name] = {"value": getattr(chosen, name), "source": source}
    for name in ("max_new_tokens", "token_budget", "max_steps"):
        set_here = name in config.model_fields_set
        source = episode(name) if set_here else "AgentConfig's default"
        out[name] = {
            "value": getattr(merged, name),
            "source": "the model's agent settings" if name in taken else source,
        }
    return out


def band_rows(questions: Sequence[Mapping[str, Any]], n: int) -> list[BandRow]:
    """Rows per hop count, then "all", from per-question records (`hops`, `valid`, `k`)."""
    groups: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for q in questions:
        groups[str(q["hops"])].append(q)
    keys = sorted(groups, key=lambda h: (len(h), h))
    rows = []
    for hops, group in [(h, groups[h]) for h in keys] + [("all", list(questions))]:
        valid = [q for q in group if q["valid"]]
        inside = sum(0 < q["k"] < n for q in valid)
        low, high = wilson(inside, len(valid))
        rows.append(
            BandRow(
                hops=hops,
                questions=len(group),
                valid=len(valid),
                in_band=inside,
                share=inside / len(valid) if valid else 0.0,
                low=low,
                high=high,
                mean_difficulty=sum(difficulty_score(q["k"], n) for q in valid) / max(len(valid), 1),
                pass_rate=sum(q["k"] for q in valid) / max(n * len(valid), 1),
            )
        )
    return rows


def question_record(task: Task, k: int, n: int) -> dict[str, Any]:
    """One question's row of `BandReport.questions`: id, hops, question, answer, valid, k, difficulty."""
    ok = is_valid(task)
    return {
        "id": task.id,
        "hops": int(task.metadata["hops"]),
        "question": task.question,
        "answer": task.golden_answers[0] if task.golden_answers else None,
        "valid": ok,
        "k": k,
        "difficulty": difficulty_score(k, n) if ok else 0.0,
    }


def measure_band(
    questions: Sequence[Task],
    policy: Policy,
    *,
    n: int = 5,
    solver_config: AgentConfig,
    tools: ToolSet | None = None,
    executor: Executor | None = None,
    store_dir: str | Path,
    run_id: str = "band",
    concurrency: int = 4,
    episode_source: str | Mapping[str, str] = "the episode's AgentConfig",
) -> BandReport:
    """Play `n` solver attempts at every valid question (see the module docstring) and return the band per hop.

    Give the solver's tools (`tools`, a local executor is built and closed here) or an `executor` with a
    "solver" tool set (left open). The attempts are recorded in a store at `store_dir`."""
    from workbench.agent.local import LocalExecutor
    from workbench.store import Store

    if n < 2:
        raise ConfigError(f"n={n}: the band compares attempts (0 < k < n); use n >= 2")
    if (tools is None) == (executor is None):
        raise ConfigError("pass the solver's tools= or an executor= with a 'solver' tool set (one of them)")
    if any("hops" not in t.metadata for t in questions):
        raise ConfigError("every question needs metadata['hops'] (its hop count): the band is reported per hop")
    if len({t.id for t in questions}) < len(questions):
        raise ConfigError("question ids repeat: give each question its own Task.id")
    items = [
        Proposed(Trajectory(task=t, id=uuid.uuid4().hex, role="proposer"), Proposal(t.question, t.golden_answers[0]))
        for t in questions
        if is_valid(t)
    ]
    for it in items:
        it.valid = True
    owned = LocalExecutor({"solver": tools}, concurrency=concurrency) if tools is not None else None
    runner = owned if owned is not None else executor
    assert runner is not None
    store = Store(Path(store_dir))
    try:
        phases = Phases(runner, AgentConfig(), solver_config, store, run_id)
        spec = RewardSpec.preset("drzero_solver")
        run_sync(phases.attempt(items, policy, n, spec, lambda it: list(it.traj.task.golden_answers)))
    finally:
        store.close()
        if owned is not None:
            owned.close()
    ks: dict[str, int] = {}
    for it in items:
        attach_attempts(it.traj, it.attempts)
        ks[it.traj.task.id] = int(sum(it.traj.metadata["solver_correct"]))
    records = [question_record(t, ks.get(t.id, 0), n) for t in questions]
    sampling = applied_sampling(policy, solver_config, episode_source)
    return BandReport(band_rows(records, n), n, sampling, records)


__all__ = ["BandReport", "BandRow", "applied_sampling", "band_rows", "is_valid", "measure_band"]

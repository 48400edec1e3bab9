"""The two phases every self-evolution iteration runs, shared by Dr. Zero and Agent0 modes.

1. `propose`: proposer NB-Agent episodes (role "proposer"); each trajectory gets its `Proposal`
   (`final_answer` = the answer, `metadata["question"]` = the question). They are recorded once,
   after the mode scored them (`record`), or by the trainer in a proposer update.
2. `attempt`: n solver episodes per question (role "solver"), each recorded (scored by the mode's
   solver spec, written) as it ends; each attempt's task carries `metadata["origin"]` = the proposer
   trajectory id, so `store.children(proposer_id)` lists the attempts and `store.origin(attempt_id)`
   finds the proposer.

Both run on one executor (`evolve_executor`: tool sets "proposer" and "solver", one warm kernel
pool). The phases are async (the trainer's episode runners await them); `propose_sync` /
`attempt_sync` are the loop's one-call wrappers. `ProposerEpisodes` wraps both phases plus scoring
as the `async (tasks, policy) -> trajectories` episode runner `workbench.train` expects, so a
proposer update samples fresh questions with the live weights and scores them with real solver
attempts, as Dr. Zero does.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from workbench.agent.config import AgentConfig
from workbench.agent.executor import Executor, config_for, gather_jobs, make_jobs
from workbench.agent.recorder import Recorder
from workbench.contracts import Scorer
from workbench.evolve.proposer import Proposal, proposal_of
from workbench.kernel.sync import run_sync
from workbench.policies.base import Policy
from workbench.store import Store
from workbench.train.run import NBAgentEpisodes
from workbench.trajectory import Task, Trajectory

if TYPE_CHECKING:
    from workbench.agent.local import LocalExecutor, ToolSet
    from workbench.evolve.modes import Mode
    from workbench.rewards.spec import RewardSpec


@dataclass
class Proposed:
    """One proposer episode, its proposal and (once run) its solver attempts and rewards."""

    traj: Trajectory
    proposal: Proposal | None
    attempts: list[Trajectory] = field(default_factory=list)
    rewards: dict[str, float] = field(default_factory=dict)
    valid: bool = False  # passed the mode's gate
    chosen: bool = True  # the sample of its prompt the solver attempts (Dr. Zero: best format)
    extra: dict[str, Any] = field(default_factory=dict)  # mode specific: format parts, vote …

    @property
    def hops(self) -> int:
        return int(self.traj.task.metadata.get("hops", 1))


def evolve_executor(proposer_tools: ToolSet, solver_tools: ToolSet, concurrency: int) -> LocalExecutor:
    """A `LocalExecutor` with the two roles' tool sets (episodes take a fresh kernel each)."""
    from workbench.agent.local import LocalExecutor

    return LocalExecutor({"proposer": proposer_tools, "solver": solver_tools}, concurrency=concurrency)


@dataclass
class Phases:
    """What both phases run with: the executor (tool sets "proposer" and "solver"), the agent
    configs, the store (with a recorder writing to it) and the run id."""

    executor: Executor
    proposer_config: AgentConfig
    solver_config: AgentConfig
    store: Store
    run_id: str
    progress: bool = False
    recorder: Recorder = field(init=False)

    def __post_init__(self) -> None:
        self.recorder = Recorder(self.store)

    async def propose(
        self, tasks: Sequence[Task], policy: Policy, lineage: dict[str, Any] | None = None
    ) -> list[Proposed]:
        """Proposer episodes and their proposals (not yet recorded: `record` does, once scored)."""
        jobs = make_jobs(
            tasks,
            config_for(policy, self.proposer_config),
            role="proposer",
            tools="proposer",
            run_id=self.run_id,
            lineage=lineage,
        )
        out = []
        for traj in await gather_jobs(self.executor, jobs, policy, progress=self.progress):
            proposal = proposal_of(traj)
            traj.final_answer = proposal.answer if proposal else None
            if proposal:
                traj.metadata["question"] = proposal.question
            out.append(Proposed(traj, proposal))
        return out

    async def attempt(
        self,
        items: Sequence[Proposed],
        policy: Policy,
        n: int,
        reward_spec: Scorer,
        answer_of: Callable[[Proposed], list[str]] | None = None,
        lineage: dict[str, Any] | None = None,
    ) -> None:
        """Run `n` solver episodes for every valid, chosen item, each recorded with `reward_spec`;
        golden answers default to the proposer's."""
        todo = [it for it in items if it.valid and it.chosen and it.proposal]
        tasks, owners = [], []
        for it in todo:
            golds = answer_of(it) if answer_of else [it.proposal.answer]  # type: ignore[union-attr]
            for j in range(n):
                meta = {
                    "hops": it.hops,
                    "origin": it.traj.id,
                    "attempt": j,
                    "source": "evolve",
                    "iteration": it.traj.task.metadata.get("iteration"),
                }
                tasks.append(
                    Task(
                        id=f"{it.traj.id[:12]}-a{j}",
                        question=it.proposal.question,  # type: ignore[union-attr]
                        golden_answers=list(golds),
                        metadata=meta,
                    )
                )
                owners.append(it)
        if not tasks:
            return
        jobs = make_jobs(
            tasks,
            config_for(policy, self.solver_config),
            role="solver",
            tools="solver",
            reward_spec=reward_spec,
            run_id=self.run_id,
            lineage=lineage,
        )
        for it, traj in zip(
            owners, await gather_jobs(self.executor, jobs, policy, self.recorder, progress=self.progress), strict=True
        ):
            it.attempts.append(traj)

    def propose_sync(
        self, tasks: Sequence[Task], policy: Policy, lineage: dict[str, Any] | None = None
    ) -> list[Proposed]:
        return run_sync(self.propose(tasks, policy, lineage))

    def attempt_sync(
        self,
        items: Sequence[Proposed],
        policy: Policy,
        n: int,
        reward_spec: Scorer,
        lineage: dict[str, Any] | None = None,
    ) -> None:
        run_sync(self.attempt(items, policy, n, reward_spec, lineage=lineage))

    def scored(self, items: Sequence[Proposed], spec: RewardSpec) -> None:
        """Put each item's rewards on its trajectory (without recording it)."""
        for it in items:
            it.traj.rewards = dict(it.rewards)
            it.traj.reward_spec = spec.name

    def record(self, items: Sequence[Proposed], spec: RewardSpec, provenance: dict[str, Any] | None = None) -> None:
        """Record each item's trajectory once, with its rewards (and, in the reward history, the spec)."""
        for it in items:
            it.traj = self.recorder.record(it.traj, spec, rewards=it.rewards, provenance=provenance or {})


class ProposerEpisodes:
    """The proposer's episode runner for `workbench.train`: propose, attempt, score.

    The mode's `gate(items)` marks which proposals the solver attempts; `mode.score(items)` sets
    rewards after the attempts (its proposer spec, solver attempts as context). The solver attempts
    are recorded here; the proposer trajectories are returned scored, for the trainer to record.
    With `solver_policy=None` the solver is the live policy being trained (one model).
    """

    def __init__(
        self,
        phases: Phases,
        *,
        solver_policy: Policy | None,
        attempts: int,
        mode: Mode,
        answer_of: Callable[[Proposed], list[str]] | None = None,
    ) -> None:
        self.phases = phases
        self.solver_policy = solver_policy
        self.attempts = attempts
        self.mode, self.answer_of = mode, answer_of
        self.solver_episodes = 0  # solver episodes run so far (the proposer update's cost)

    async def __call__(self, tasks: Sequence[Task], policy: Policy) -> list[Trajectory]:
        phases = self.phases
        items = await phases.propose(tasks, policy, lineage={"phase": "proposer_update"})
        self.mode.gate(items)
        await phases.attempt(
            items,
            self.solver_policy or policy,
            self.attempts,
            self.mode.solver_spec,
            self.answer_of,
            lineage={"phase": "proposer_update"},
        )
        self.solver_episodes += sum(len(it.attempts) for it in items)
        self.mode.score(items)
        phases.scored(items, self.mode.proposer_spec)
        return [it.traj for it in items]


class PrecomputedReward:
    """Training reward for trajectories the episode runner already scored: returns `traj.rewards`."""

    name = "evolve.precomputed"

    def score(self, traj: Trajectory) -> dict[str, float]:
        rewards = dict(traj.rewards)
        rewards.setdefault("total", 0.0)
        return rewards


class SolverEpisodes(NBAgentEpisodes):
    """The solver's episode runner for `workbench.train`: NB-Agent episodes returned unscored, for the
    trainer to score with its reward and write once. `tools_or_executor`: an executor with a
    "solver" tool set (shared, left open), or the solver's tools (a local executor is built, closed
    by `close()`). `reward_spec` and `store` are accepted for older callers and unused: the trainer
    scores with the `TrainRequest`'s reward and writes to its store."""

    def __init__(
        self,
        tools_or_executor: Executor | ToolSet,
        agent_config: AgentConfig,
        *,
        run_id: str = "",
        concurrency: int = 4,
        reward_spec: Scorer | None = None,
        store: Store | None = None,
    ) -> None:
        shared = isinstance(tools_or_executor, Executor)
        super().__init__(
            agent_config=agent_config,
            executor=tools_or_executor if isinstance(tools_or_executor, Executor) else None,
            tools=None if isinstance(tools_or_executor, Executor) else tools_or_executor,
            toolset="solver" if shared else "default",
            concurrency=concurrency,
            run_id=run_id or None,
            role="solver",
            lineage={"phase": "solver_update"},
        )


__all__ = [
    "Phases",
    "PrecomputedReward",
    "Proposed",
    "ProposerEpisodes",
    "SolverEpisodes",
    "evolve_executor",
]

"""The two phases every self-evolution iteration runs, shared by Dr. Zero and Agent0 modes.

1. `propose`: proposer NB-Agent episodes (role "proposer"); each trajectory gets its `Proposal`
   (`final_answer` = the answer, `metadata["question"]` = the question) and is re-written to the store.
2. `attempt`: n solver episodes per question (role "solver"); each attempt's task carries
   `metadata["origin"]` = the proposer trajectory id, so `store.children(proposer_id)` lists the
   attempts and `store.origin(attempt_id)` finds the proposer.

A `Batch` holds one `Proposed` per proposer episode; the mode's scorer fills in rewards.
`ProposerEpisodes` wraps both phases plus scoring as the `async (tasks, policy) -> trajectories`
episode runner `workbench.train` expects, so a proposer update samples fresh questions with the live
weights and scores them with real solver attempts, as Dr. Zero does.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Any, AsyncIterator, Callable, Sequence

from workbench.evolve.proposer import Proposal, proposal_of
from workbench.train.run import NBAgentEpisodes
from workbench.trajectory import Task, Trajectory


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


@contextlib.asynccontextmanager
async def kernel_pool(agent_config: Any, size: int) -> AsyncIterator[Any]:
    """One warm pool for both roles (episodes take a fresh kernel each)."""
    from workbench.kernel import KernelPool

    pool = KernelPool(size=size, profile=agent_config.profile, isolation=agent_config.isolation,
                      output_cap=agent_config.output_cap, startup_code="import workbench.runtime")
    await pool.start()
    try:
        yield pool
    finally:
        await pool.close()


@dataclass
class Phases:
    """What both phases run with: tools, agent configs, the store and the shared kernel pool."""

    proposer_tools: Any
    solver_tools: Any
    proposer_config: Any  # AgentConfig
    solver_config: Any
    store: Any
    pool: Any
    run_id: str
    concurrency: int = 4
    progress: bool = True

    async def propose(self, tasks: Sequence[Task], policy: Any, lineage: dict[str, Any] | None = None) -> list[Proposed]:
        from workbench.agent.runner import NBAgent

        agent = NBAgent(policy, tools=self.proposer_tools, config=self.proposer_config, store=self.store,
                        pool=self.pool, run_id=self.run_id, concurrency=self.concurrency, role="proposer",
                        lineage=lineage)
        trajs = await agent.arun(list(tasks), progress=self.progress)
        out = []
        for traj in trajs:
            proposal = proposal_of(traj)
            traj.final_answer = proposal.answer if proposal else None
            if proposal:
                traj.metadata["question"] = proposal.question
            out.append(Proposed(traj, proposal))
        return out

    async def attempt(self, items: Sequence[Proposed], policy: Any, n: int, reward_spec: Any,
                      answer_of: Callable[[Proposed], list[str]] | None = None,
                      lineage: dict[str, Any] | None = None) -> None:
        """Run `n` solver episodes for every valid, chosen item, scored by `reward_spec`; golden
        answers default to the proposer's."""
        from workbench.agent.runner import NBAgent

        todo = [it for it in items if it.valid and it.chosen and it.proposal]
        tasks, owners = [], []
        for it in todo:
            golds = answer_of(it) if answer_of else [it.proposal.answer]  # type: ignore[union-attr]
            for j in range(n):
                meta = {"hops": it.hops, "origin": it.traj.id, "attempt": j, "source": "evolve",
                        "iteration": it.traj.task.metadata.get("iteration")}
                tasks.append(Task(id=f"{it.traj.id[:12]}-a{j}", question=it.proposal.question,  # type: ignore[union-attr]
                                  golden_answers=list(golds), metadata=meta))
                owners.append(it)
        if not tasks:
            return
        agent = NBAgent(policy, tools=self.solver_tools, config=self.solver_config, store=self.store,
                        pool=self.pool, run_id=self.run_id, concurrency=self.concurrency, role="solver",
                        reward_spec=reward_spec, lineage=lineage)
        for it, traj in zip(owners, await agent.arun(tasks, progress=self.progress)):
            it.attempts.append(traj)

    def record(self, items: Sequence[Proposed], spec: Any, provenance: dict[str, Any] | None = None) -> None:
        """Put each item's rewards on its trajectory and in the store (with history and the spec)."""
        for it in items:
            it.traj.rewards = dict(it.rewards)
            it.traj.reward_spec = spec.name
            if self.store is not None:
                self.store.write(it.traj)
                self.store.record_rewards(it.traj.id, it.rewards, spec.name, spec.to_json(), provenance=provenance)


class ProposerEpisodes:
    """The proposer's episode runner for `workbench.train`: propose, attempt, score.

    The mode's `gate(items)` marks which proposals the solver attempts; `mode.score(items)` sets
    rewards after the attempts (its proposer spec, solver attempts as context). With
    `solver_policy=None` the solver is the live policy being trained (one model).
    """

    def __init__(self, phases_kwargs: dict[str, Any], *, solver_policy: Any, attempts: int, mode: Any,
                 answer_of: Callable[[Proposed], list[str]] | None = None) -> None:
        self.phases_kwargs = phases_kwargs
        self.solver_policy = solver_policy
        self.attempts = attempts
        self.mode, self.answer_of = mode, answer_of
        self.solver_episodes = 0  # solver episodes run so far (the proposer update's cost)

    async def __call__(self, tasks: list[Task], policy: Any) -> list[Trajectory]:
        kw = dict(self.phases_kwargs)
        async with kernel_pool(kw["solver_config"], kw.get("concurrency", 4)) as pool:
            phases = Phases(pool=pool, **kw)
            items = await phases.propose(tasks, policy, lineage={"phase": "proposer_update"})
            self.mode.gate(items)
            await phases.attempt(items, self.solver_policy or policy, self.attempts, self.mode.solver_spec,
                                 self.answer_of, lineage={"phase": "proposer_update"})
            self.solver_episodes += sum(len(it.attempts) for it in items)
            self.mode.score(items)
            phases.record(items, self.mode.proposer_spec)
        return [it.traj for it in items]


class PrecomputedReward:
    """Training reward for trajectories the episode runner already scored: returns `traj.rewards`."""

    name = "evolve.precomputed"

    def score(self, traj: Trajectory) -> dict[str, float]:
        rewards = dict(traj.rewards)
        rewards.setdefault("total", 0.0)
        return rewards


class SolverEpisodes(NBAgentEpisodes):
    """The solver's episode runner for `workbench.train`: NB-Agent episodes with the search tool,
    scored by the mode's solver spec (EM against the QA target). Its kernel pool lives until `aclose()`."""

    def __init__(self, tools: Any, agent_config: Any, *, reward_spec: Any, store: Any = None, run_id: str = "",
                 concurrency: int = 4) -> None:
        super().__init__(agent_config=agent_config, tools=tools, concurrency=concurrency, store=store,
                         run_id=run_id or None, role="solver", reward_spec=reward_spec,
                         lineage={"phase": "solver_update"})


__all__ = ["Phases", "PrecomputedReward", "ProposerEpisodes", "Proposed", "SolverEpisodes", "kernel_pool"]

"""The rollout seam: jobs, the EpisodeSandbox protocol, LocalExecutor and the Recorder, with real
kernels, a real gateway and a real store."""

from __future__ import annotations

import asyncio
import pickle

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from workbench.agent import (
    AgentConfig,
    EpisodeJob,
    EpisodeSandbox,
    Executor,
    LocalExecutor,
    NBAgent,
    Recorder,
    StepResult,
    make_jobs,
    run_jobs,
)
from workbench.agent.episode import run_episode
from workbench.agent.episode_sandbox import LocalEpisodeSandbox, ToolPrompt
from workbench.errors import ConfigError, StoreError
from workbench.kernel.sync import run_sync
from workbench.policies import ScriptedPolicy
from workbench.rewards import resolve_reward
from workbench.trajectory import Task, Trajectory
from workbench.worlds.scripted.solver import world_solver

CONFIG = AgentConfig(max_steps=6, max_context_tokens=16384, seed=0)
SUBMIT = "<think>done</think>\n<code>\nsubmit_final_answer('ok')\n</code>"


class PickledEnvironment:
    """An EpisodeSandbox whose every answer crosses a pickle boundary, as a remote one's would."""

    def __init__(self, inner: EpisodeSandbox) -> None:
        self.inner = inner
        self.steps = 0

    @property
    def prompt(self) -> ToolPrompt:
        return pickle.loads(pickle.dumps(self.inner.prompt))

    async def step(self, code: str | None, timeout: float) -> StepResult:
        self.steps += 1
        return pickle.loads(pickle.dumps(await self.inner.step(code, timeout)))


def _essence(traj: Trajectory) -> list:
    return [
        traj.termination,
        traj.final_answer,
        [
            (s.code, s.observation_text, [(c.name, c.arguments, c.result) for c in s.host_calls], s.notepad)
            for s in traj.steps
        ],
    ]


def test_protocols_are_met_and_jobs_are_plain_data(pick, world_tools):
    assert isinstance(LocalExecutor(), Executor)
    gateway = type("Gateway", (), {"registry": world_tools})()
    assert isinstance(LocalEpisodeSandbox(None, gateway, "", ""), EpisodeSandbox)
    task = Task(id="t", question="q?", golden_answers=["a"], metadata={"origin": "p1", "hops": 2})
    [job] = make_jobs(
        [task], CONFIG, role="solver", reward_spec=resolve_reward("em"), run_id="r", lineage={"iteration": 3}
    )
    again = pickle.loads(pickle.dumps(job))
    assert again == job and again.seed == 0
    traj = again.trajectory()
    assert (traj.id, traj.run_id, traj.role) == (job.id, "r", "solver")
    assert traj.lineage == {"iteration": 3, "origin": "p1"}
    jobs = make_jobs(pick(1, 3), CONFIG)
    assert [j.seed for j in jobs] == [0, 1, 2] and len({j.id for j in jobs}) == 3


@settings(max_examples=60, deadline=None)
@given(question=st.text(), task_id=st.text(), role=st.text(), lineage=st.dictionaries(st.text(), st.text()))
def test_jobs_of_any_text_pickle_and_open_their_trajectory(question, task_id, role, lineage):
    job = EpisodeJob(task=Task(id=task_id, question=question), agent=CONFIG, role=role, lineage=lineage, parent="p")
    again = pickle.loads(pickle.dumps(job))
    traj = again.trajectory()
    assert traj.task.question == question and traj.role == role
    assert traj.lineage == {**lineage, "parent": lineage.get("parent", "p")}


def test_a_remote_like_environment_gives_the_same_episode(world_tools, pick):
    """run_episode needs only the EpisodeSandbox protocol: over pickled step results the episode is
    the same as over the local environment itself."""
    from workbench.kernel import AsyncKernel
    from workbench.runtime import notepad_api_doc
    from workbench.tools import ToolGateway, setup_code

    [task] = pick(2, 1)

    async def episode(wrap: bool) -> tuple[Trajectory, int]:
        async with AsyncKernel(startup_code="import workbench.runtime") as kernel:
            gateway = ToolGateway(world_tools, kernel.rollout_dir / "run" / "gateway.sock", token="t0k")
            async with gateway:
                await kernel.execute(setup_code(world_tools, token="t0k") + f"task = {task.question!r}\n")
                env = LocalEpisodeSandbox(kernel, gateway, world_tools.prompt_text(), notepad_api_doc())
                used = PickledEnvironment(env) if wrap else env
                traj = await run_episode(task, world_solver(), used, CONFIG, seed=0)
                return traj, getattr(used, "steps", len(traj.steps))

    local, _ = run_sync(episode(False))
    remote, calls = run_sync(episode(True))
    assert local.termination == "submitted" and local.final_answer in task.golden_answers
    assert _essence(remote) == _essence(local)
    assert calls == len(remote.steps)  # one environment call per turn


def test_local_executor_pools_close_with_the_event_loop_that_made_them(world_tools, pick):
    """A batch under `asyncio.run` leaves no kernel behind when that loop ends (it cannot be closed later)."""
    from workbench.kernel.procs import process_tree

    executor = LocalExecutor(world_tools, concurrency=1)
    jobs = make_jobs(pick(1, 1), CONFIG)

    async def batch() -> list[int]:
        trajs = [traj async for _, traj in executor.stream(jobs, world_solver())]
        assert [t.termination for t in trajs] == ["submitted"]
        pools = list(executor._home.pools.values())
        for pool in pools:
            await pool.wait_warm()  # the replacement of the kernel the episode used
        return [k.pid for pool in pools for k in pool._warm_set if k.pid]

    warm = asyncio.run(batch())  # the pool's warm kernel is alive when the batch ends
    assert warm and executor.stats()["pools"] == 0  # ... and closed with the loop
    assert all(not process_tree(pid) for pid in warm)
    warm = asyncio.run(batch())  # a later loop gets pools of its own
    assert warm and executor.stats()["pools"] == 0


def test_local_executor_streams_one_trajectory_per_job_within_its_concurrency(world_tools, pick):
    tasks = pick(1, 3) + pick(2, 2)
    executor = LocalExecutor(world_tools, concurrency=2)
    try:
        trajs = run_jobs(executor, make_jobs(tasks, CONFIG), world_solver())
        assert [t.task.id for t in trajs] == [t.id for t in tasks]
        assert all(t.termination == "submitted" for t in trajs)
        assert all(t.rewards == {} for t in trajs)  # an executor never scores
        stats = executor.stats()
        assert stats["started"] == stats["finished"] == 5 and stats["in_flight"] == 0
        assert 1 <= stats["high_water"] <= 2 and stats["pools"] == 1
        # the same warm pool serves the next batch
        run_jobs(executor, make_jobs(tasks[:1], CONFIG), world_solver())
        assert executor.stats()["pools"] == 1
    finally:
        executor.close()


def test_named_tool_sets_route_each_job(world_tools, pick):
    from workbench.tools import ToolRegistry

    policy = ScriptedPolicy.from_turns([SUBMIT])
    executor = LocalExecutor({"search": world_tools, "bare": ToolRegistry([])}, concurrency=2)
    try:
        task = pick(1, 1)
        [with_search] = run_jobs(executor, make_jobs(task, CONFIG, tools="search"), policy)
        [bare] = run_jobs(executor, make_jobs(task, CONFIG, tools="bare"), policy)
        shown = [policy.codec.decode(t.steps[0].prompt_ids) for t in (with_search, bare)]
        assert "search(" in shown[0] and "search(" not in shown[1]
        assert with_search.final_answer == bare.final_answer == "ok"
        with pytest.raises(ConfigError, match="no tool set 'nope'"):
            run_jobs(executor, make_jobs(task, CONFIG, tools="nope"), policy)
    finally:
        executor.close()


def test_nbagent_runs_on_a_given_executor_and_leaves_it_open(world_tools, pick, tmp_path, counting_store):
    executor = LocalExecutor(world_tools, concurrency=2)
    try:
        with counting_store(tmp_path / "s") as store:
            agent = NBAgent(
                world_solver(), executor=executor, config=CONFIG, store=store, reward_spec=resolve_reward("em")
            )
            trajs = agent.run(pick(1, 2), progress=False)
            assert all(t.rewards["total"] == 1.0 for t in trajs)
            assert store.writes == {t.id: 1 for t in trajs}  # each written once
            assert all(len(store.reward_history(t.id)) == 1 for t in trajs)
        assert executor.stats()["pools"] >= 1  # not closed by the agent
    finally:
        executor.close()
    with pytest.raises(ConfigError, match="executor"):
        NBAgent(world_solver(), executor=executor, tools=world_tools)


def test_an_executor_used_from_another_event_loop_gets_pools_of_its_own(world_tools, pick):
    executor = LocalExecutor(world_tools, concurrency=1)
    try:
        [first] = run_jobs(executor, make_jobs(pick(1, 1), CONFIG), world_solver())

        async def elsewhere() -> list[Trajectory]:
            from workbench.agent.executor import gather_jobs

            return await gather_jobs(executor, make_jobs(pick(1, 1), CONFIG), world_solver())

        [second] = asyncio.run(elsewhere())  # e.g. a training hook calling a runner with asyncio.run
        assert first.termination == second.termination == "submitted"
        [third] = run_jobs(executor, make_jobs(pick(1, 1), CONFIG), world_solver())
        assert third.termination == "submitted"
    finally:
        executor.close()


def test_recorder_scores_writes_once_and_keeps_failures_on_the_trajectory(tmp_path, counting_store):
    class Broken:
        name = "broken"

        def score(self, traj):
            raise ValueError("reward bug")

    task = Task(id="t", question="q", golden_answers=["a"])
    with counting_store(tmp_path / "s") as store:
        recorder = Recorder(store)
        good = recorder.record(Trajectory(task=task, final_answer="a"), resolve_reward("em"))
        assert good.rewards["total"] == 1.0 and store.get(good.id).rewards["total"] == 1.0
        with pytest.raises(StoreError, match="already recorded"):
            recorder.record(good)
        bad = recorder.record(Trajectory(task=task, final_answer="a"), Broken())
        assert "ValueError: reward bug" in bad.metadata["reward_error"] and store.get(bad.id) is not None
        spec = resolve_reward("em")
        given = recorder.record(Trajectory(task=task), spec, rewards={"total": 0.5}, provenance={"iteration": 1})
        history = store.reward_history(given.id)
        assert history["spec_name"].iloc[-1] == spec.name and history["total"].iloc[-1] == 0.5
        assert store.writes == {good.id: 1, bad.id: 1, given.id: 1}


@settings(max_examples=40, deadline=None)
@given(answer=st.text(), question=st.text())
def test_recorder_stores_any_text_once(tmp_path_factory, counting_store, answer, question):
    with counting_store(tmp_path_factory.mktemp("rec")) as store:
        traj = Recorder(store).record(
            Trajectory(task=Task(id="t", question=question, golden_answers=["x"]), final_answer=answer),
            resolve_reward("em"),
        )
        assert store.writes == {traj.id: 1}
        assert store.get(traj.id).rewards == traj.rewards

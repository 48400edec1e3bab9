"""The rollout seam's types: the real classes meet its protocols, and a store written by a user
(two methods, no SQLite) works with the Recorder and the executors, each trajectory once."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from workbench.agent import AgentConfig, Executor, LocalExecutor, Recorder, make_jobs, run_jobs
from workbench.agent.episode_sandbox import CodeKernel
from workbench.agent.recorder import Scorer, TrajectoryStore
from workbench.errors import ConfigError, StoreError
from workbench.rewards import RewardSpec, resolve_reward
from workbench.safetext import has_surrogates
from workbench.trajectory import Task, Trajectory
from workbench.worlds.scripted.solver import world_solver

CONFIG = AgentConfig(max_steps=6, max_context_tokens=16384, seed=0)


class ListStore:
    """A user's store: trajectories as dicts in a list, reward lines in another."""

    def __init__(self) -> None:
        self.rows: list[dict[str, Any]] = []
        self.reward_lines: list[tuple[str, dict[str, float], str, Any, Any]] = []

    def write(self, traj: Trajectory) -> None:
        self.rows.append(traj.to_dict())

    def record_rewards(
        self,
        traj_id: str,
        rewards: dict[str, float],
        spec_name: str,
        spec_json: str | dict[str, Any] | None = None,
        provenance: dict[str, Any] | None = None,
    ) -> None:
        self.reward_lines.append((traj_id, dict(rewards), spec_name, spec_json, provenance))

    def ids(self) -> list[str]:
        return [row["id"] for row in self.rows]


class HalfScorer:
    """A scorer with nothing but `score` (no name, no JSON)."""

    def score(self, traj: Trajectory) -> dict[str, float]:
        return {"total": float(len(traj.final_answer or "") % 2)}


def test_the_real_classes_meet_the_seam_protocols(tmp_path, counting_store):
    from workbench.cluster.executor import RayExecutor
    from workbench.kernel import AsyncKernel
    from workbench.store import Store

    with Store(tmp_path / "a") as store, counting_store(tmp_path / "b") as counted:
        assert isinstance(store, TrajectoryStore) and isinstance(counted, TrajectoryStore)
    assert isinstance(ListStore(), TrajectoryStore)
    assert not isinstance(object(), TrajectoryStore)
    for scorer in (RewardSpec.preset("l0"), resolve_reward("em"), resolve_reward(lambda t: 1.0), HalfScorer()):
        assert isinstance(scorer, Scorer)
    assert issubclass(AsyncKernel, CodeKernel) and not issubclass(Store, CodeKernel)
    assert issubclass(LocalExecutor, Executor) and issubclass(RayExecutor, Executor)


def test_a_recorder_refuses_what_is_not_a_store_and_names_the_fix():
    class WriteOnly:
        def write(self, traj: Trajectory) -> None: ...

    for wrong in (object(), "runs/demo", WriteOnly()):
        with pytest.raises(ConfigError, match=r"write\(traj\) and record_rewards"):
            Recorder(wrong)  # type: ignore[arg-type]
    assert Recorder(None).record(Trajectory(task=Task(id="t", question="q"))).id  # scoring only


def test_a_user_store_gets_each_episode_once_from_a_real_executor(world_tools, pick):
    tasks = pick(1, 2)
    store, executor = ListStore(), LocalExecutor(world_tools, concurrency=2)
    recorder = Recorder(store)
    try:
        trajs = run_jobs(executor, make_jobs(tasks, CONFIG, reward_spec=resolve_reward("em")), world_solver(), recorder)
    finally:
        executor.close()
    assert sorted(store.ids()) == sorted(t.id for t in trajs) and len(store.rows) == 2
    assert sorted(row["task"]["id"] for row in store.rows) == sorted(t.id for t in tasks)
    for traj in trajs:
        row = next(r for r in store.rows if r["id"] == traj.id)
        assert row["termination"] == "submitted" and row["rewards"] == traj.rewards and "total" in traj.rewards
        assert Trajectory.from_dict(row).final_answer == traj.final_answer
    with pytest.raises(StoreError, match="already recorded"):
        recorder.record(trajs[0])
    assert len(store.rows) == 2 and store.reward_lines == []  # no provenance: no reward history


def test_a_user_store_gets_the_reward_history_line_with_provenance():
    store, spec = ListStore(), resolve_reward("em")
    traj = Recorder(store).record(
        Trajectory(task=Task(id="t", question="q", golden_answers=["a"])),
        spec,
        rewards={"total": 0.5},
        provenance={"iteration": 2},
    )
    assert store.ids() == [traj.id]
    [(traj_id, rewards, name, spec_json, provenance)] = store.reward_lines
    assert (traj_id, rewards, name, provenance) == (traj.id, {"total": 0.5}, spec.name, {"iteration": 2})
    assert spec_json == spec.to_json()
    bare = ListStore()
    Recorder(bare).record(
        Trajectory(task=Task(id="t", question="q")), HalfScorer(), rewards={"total": 1.0}, provenance={}
    )
    assert bare.reward_lines[0][2:4] == ("HalfScorer", None)  # no name, no to_json: the class name, no JSON


@settings(max_examples=60, deadline=None)
@given(question=st.text(), answer=st.text(), key=st.text(), value=st.text())
def test_a_user_store_gets_any_text_once_and_as_valid_unicode(question, answer, key, value):
    store = ListStore()
    traj = Trajectory(task=Task(id="t", question=question), final_answer=answer, metadata={key: value})
    recorded = Recorder(store).record(traj, HalfScorer())
    assert store.ids() == [recorded.id]
    [row] = store.rows
    assert not has_surrogates(json.dumps(row, ensure_ascii=False))
    assert row["rewards"] == {"total": float(len(recorded.final_answer or "") % 2)}
    assert recorded.reward_spec == "HalfScorer"


def test_make_executor_local_builds_a_tools_spec_here():
    from workbench.agent.executor import EpisodeJob
    from workbench.cluster.select import make_executor
    from workbench.cluster.spec import ToolsSpec
    from workbench.tools import ToolRegistry

    built = ToolRegistry([])
    executor = make_executor("local", {"default": ToolsSpec(lambda: built), "other": ToolRegistry([])}, concurrency=1)
    assert isinstance(executor, LocalExecutor)
    job = EpisodeJob(task=Task(id="t", question="q"), agent=CONFIG)
    assert executor.registry_for(job) is built
    single = make_executor("local", ToolsSpec(lambda: built), concurrency=1)
    assert isinstance(single, LocalExecutor) and single.registry_for(job) is built

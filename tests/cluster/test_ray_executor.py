"""RayExecutor on a real local Ray cluster (two simulated nodes), real bwrap kernels, real stores."""

from __future__ import annotations

import os
import pickle
import time

import pytest

from workbench.agent.executor import make_jobs, run_jobs
from workbench.agent.local import LocalExecutor
from workbench.agent.recorder import Recorder
from workbench.agent.resolve import load_search_tool
from workbench.cluster import RayExecutor, ToolsSpec
from workbench.kernel.procs import process_tree
from workbench.policies import ScriptedPolicy
from workbench.store import Store
from workbench.worlds.solver import world_solver

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("ray")]


def search_spec(corpus_path) -> ToolsSpec:
    return ToolsSpec("workbench.agent.resolve:load_search_tool", corpus=str(corpus_path))


def essence(traj):
    """What must not depend on where an episode ran."""
    return {"task": traj.task.id, "termination": traj.termination, "answer": traj.final_answer,
            "steps": [(s.code, s.observation_text, [(c.name, c.arguments, c.result, c.error) for c in s.tool_calls],
                       s.notepad) for s in traj.steps]}


def test_local_and_ray_in_both_modes_give_identical_trajectories(ray_cluster, tasks, corpus_path,
                                                                 agent_config, tmp_path):
    jobs = make_jobs(tasks, agent_config)
    local = LocalExecutor(load_search_tool(corpus=corpus_path), concurrency=2)
    try:
        expected = run_jobs(local, jobs, world_solver())
    finally:
        local.close()
    assert all(t.termination == "submitted" for t in expected), [(t.termination, t.error) for t in expected]

    for mode, policy in (("env", world_solver()), ("episode", "scripted:world")):
        executor = RayExecutor(search_spec(corpus_path), mode=mode, workers=2, kernels_per_worker=2,
                               strategy=None)
        try:
            with Store(tmp_path / mode) as store:
                got = run_jobs(executor, make_jobs(tasks, agent_config), policy, Recorder(store))
                stored = {t.id: t for t in store.iter_trajectories()}
            stats = executor.stats()
        finally:
            executor.close()
        assert [essence(t) for t in got] == [essence(t) for t in expected], mode
        assert set(stored) == {t.id for t in got}  # written once each, by the driver
        nodes = {t.lineage["worker"]["node"] for t in got}
        assert nodes <= {w["node"] for w in stats["workers"]} and all(t.lineage["worker"]["worker"] for t in got)
        assert stats["finished"] == len(tasks) and stats["worker_died"] == 0
        for w in stats["workers"]:  # never more episodes in flight on a worker than it has kernels
            assert w["high_water"] <= 2 and w["driver_high_water"] <= 2, w
        assert sum(w["episodes"] for w in stats["workers"]) == len(tasks)

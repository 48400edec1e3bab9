"""`AgentConfig.fork_groups`: a GRPO group's setup runs once and its other episodes start from a copy of
that kernel; the trajectories are the same as when every episode runs the setup itself."""

from __future__ import annotations

import pytest

import workbench.kernel.fork as fork_module
from workbench.agent import AgentConfig, LocalExecutor, make_jobs, run_jobs
from workbench.kernel.zygote import zygote_unsupported
from workbench.policies import ScriptedPolicy
from workbench.trajectory import Trajectory

pytestmark = pytest.mark.skipif(zygote_unsupported() is not None, reason=f"needs root: {zygote_unsupported()}")

SETUP = """
import random
rows = sorted(random.Random(len(task)).sample(range(1000), 4))
open('rows.txt', 'w').write(','.join(map(str, rows)))
notepad.add_fact(f'{len(rows)} rows loaded')
"""
TURNS = [
    "<think>look</think>\n<code>\nprint(task[:12], rows, open('rows.txt').read(), notepad.facts)\n</code>",
    "<think>done</think>\n<code>\nsubmit_final_answer(str(sum(rows)))\n</code>",
]


def _essence(traj: Trajectory) -> list:
    steps = [(s.code, s.observation_text, s.notepad, s.prompt_ids, s.completion_ids) for s in traj.steps]
    return [traj.task.id, traj.termination, traj.final_answer, steps]


def test_group_episodes_fork_from_one_setup_and_match_unforked_ones(world_tools, pick, monkeypatch):
    snapshots, restores = [], []
    real_snapshot, real_restore = fork_module.snapshot, fork_module.Snapshot.restore

    async def counted_snapshot(kernel, timeout=120.0):
        snapshots.append(kernel.rollout_dir.name)
        return await real_snapshot(kernel, timeout)

    async def counted_restore(self, kernel, timeout=120.0):
        restores.append(kernel.rollout_dir.name)
        return await real_restore(self, kernel, timeout)

    monkeypatch.setattr(fork_module, "snapshot", counted_snapshot)
    monkeypatch.setattr(fork_module.Snapshot, "restore", counted_restore)
    tasks = [t for t in pick(1, 2) for _ in range(3)]  # two groups of three
    runs = {}
    for fork_groups in (False, True):
        config = AgentConfig(max_steps=4, max_context_tokens=16384, seed=0, task_setup=SETUP, fork_groups=fork_groups)
        executor = LocalExecutor(world_tools, concurrency=3)
        try:
            runs[fork_groups] = run_jobs(executor, make_jobs(tasks, config), ScriptedPolicy.from_turns(TURNS))
        finally:
            executor.close()
    # one snapshot per group, in its first episode's kernel; the other two episodes of each restore it
    assert len(snapshots) == 2 and len(restores) == 4 and not set(snapshots) & set(restores)
    plain, forked = runs[False], runs[True]
    assert all(t.termination == "submitted" for t in plain)
    assert "rows loaded" in plain[0].steps[0].observation_text
    assert [_essence(t) for t in forked] == [_essence(t) for t in plain]


def test_a_group_whose_snapshot_fails_runs_the_setup_in_every_episode(world_tools, pick, monkeypatch):
    restores = []
    real_restore = fork_module.Snapshot.restore

    async def counted_restore(self, kernel, timeout=120.0):
        restores.append(kernel.rollout_dir.name)
        return await real_restore(self, kernel, timeout)

    monkeypatch.setattr(fork_module.Snapshot, "restore", counted_restore)
    # a sparse file over the children's /workspace cap: the first episode's snapshot is refused
    too_big = SETUP + "with open('sparse.bin', 'wb') as f:\n    f.truncate(900 << 20)\n"
    tasks = [t for t in pick(1, 1) for _ in range(3)]
    runs = {}
    for fork_groups in (False, True):
        config = AgentConfig(max_steps=4, max_context_tokens=16384, seed=0, task_setup=too_big, fork_groups=fork_groups)
        executor = LocalExecutor(world_tools, concurrency=3)
        try:
            runs[fork_groups] = run_jobs(executor, make_jobs(tasks, config), ScriptedPolicy.from_turns(TURNS))
        finally:
            executor.close()
    assert restores == [] and all(t.termination == "submitted" for t in runs[True])
    assert [_essence(t) for t in runs[True]] == [_essence(t) for t in runs[False]]

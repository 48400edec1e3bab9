"""`workbench run` from a shell: EM by default when tasks carry gold answers, and it says so."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from workbench.cli import main
from workbench.store import Store


@pytest.fixture(scope="module")
def saved_world(world, tmp_path_factory):
    return world.save(tmp_path_factory.mktemp("world"))


def _workbench(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "workbench.cli", *args],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )


@pytest.mark.slow
def test_run_scores_with_em_by_default_and_show_prints_rewards(saved_world, tmp_path):
    out = tmp_path / "first"
    done = _workbench(
        "run",
        "--tasks",
        str(saved_world / "qa_test.jsonl"),
        "--policy",
        "scripted",
        "--limit",
        "3",
        "--concurrency",
        "3",
        "--out",
        str(out),
    )
    assert done.returncode == 0, done.stderr
    assert "reward: em (exact match against golden_answers" in done.stdout
    assert "mean reward 1.000 (em" in done.stdout  # the scripted world solver is exact
    with Store.open_readonly(out) as store:
        trajs = list(store.iter_trajectories())
    assert len(trajs) == 3 and all(t.rewards == {"em": 1.0, "total": 1.0} and t.reward_spec == "em" for t in trajs)
    shown = _workbench("show", str(out))
    assert shown.returncode == 0 and "rewards: -" not in shown.stdout


def test_run_reward_flags(saved_world, tmp_path, capsys):
    tasks = saved_world / "qa_test.jsonl"
    assert main(["run", "--tasks", str(tasks), "--limit", "1", "--reward", "none", "--out", str(tmp_path / "a")]) == 0
    assert "reward: none (--reward none)" in capsys.readouterr().out
    with Store.open_readonly(tmp_path / "a") as store:
        assert [t.rewards for t in store.iter_trajectories()] == [{}]
    assert main(["run", "--tasks", str(tasks), "--limit", "1", "--reward", "f1", "--out", str(tmp_path / "b")]) == 0
    assert "reward: f1" in capsys.readouterr().out
    from workbench.cli.agent import pick_reward
    from workbench.trajectory import Task

    assert pick_reward(None, [Task("q", "What is 2+2?")]) == (
        None,
        "reward: none (not every task has golden_answers; --reward NAME to score anyway)",
    )

"""Evaluation stores its metrics as each trajectory's rewards, and runs a model as it was trained."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from workbench.evaluate import evaluate
from workbench.store import Store
from workbench.worlds import make_world
from workbench.worlds.scripted.solver import world_solver


@pytest.fixture(scope="module")
def world():
    return make_world(seed=0, size="small")


def test_every_evaluated_trajectory_is_stored_with_its_metrics(world, tmp_path):
    from workbench.resolve import search_registry
    from workbench.search import BM25Retriever, Corpus

    tools = search_registry(BM25Retriever.build(Corpus.from_rows(world.corpus()), show_progress=False))
    tasks = world.tasks("test")[:4]
    judged: list[str] = []

    def judge(question, prediction, golds):
        judged.append(question)
        return 0.5

    with Store(tmp_path / "ev") as store:
        report = evaluate(
            tasks, world_solver(noise=0.5, seed=3), tools=tools, store=store, judge=judge, concurrency=2, progress=False
        )
    assert len(judged) == 4  # the judge runs once per trajectory
    with Store.open_readonly(tmp_path / "ev") as store:
        stored = {t.id: t for t in store.iter_trajectories()}
        history = store.reward_history(next(iter(stored)))
    for traj in report.trajectories:
        got = stored[traj.id].rewards
        assert set(got) == {"em", "cover_em", "f1", "judge", "total"} and got["total"] == got["em"]
        assert stored[traj.id].reward_spec == "eval" and got["judge"] == 0.5
    overall = next(r for r in report.rows if r["hops"] == "all")
    assert overall["em"] == pytest.approx(sum(t.rewards["em"] for t in stored.values()) / 4)
    assert overall["judge"] == 0.5 and len(history) >= 1


@pytest.mark.slow
def test_eval_cli_runs_a_model_dir_with_its_own_settings(world, tmp_path):
    """The real command on a tiny model saved with a 512-token window and the compact prompt:
    every episode keeps inside the window (no policy_error) and the output says where the settings came from."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from workbench.agent.config import AgentConfig, stamp_model
    from workbench.models.tiny import build_tiny_model, sample_texts

    data = world.save(tmp_path / "world")
    base = build_tiny_model(tmp_path / "base", sample_texts(), vocab_size=400, max_positions=512)
    model = AutoModelForCausalLM.from_pretrained(base)
    stamp_model(model, AgentConfig(prompt="compact", max_context_tokens=512, max_new_tokens=48, max_steps=2))
    model.save_pretrained(tmp_path / "model")
    AutoTokenizer.from_pretrained(base).save_pretrained(tmp_path / "model")
    out = tmp_path / "ev"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "workbench.cli",
            "eval",
            "--dataset",
            str(data / "qa_test.jsonl"),
            "--policy",
            f"transformers:{tmp_path / 'model'}",
            "--limit",
            "3",
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )
    assert done.returncode == 0, done.stderr
    assert "agent settings from the model" in done.stdout and "prompt='compact'" in done.stdout
    assert "max_steps=2" in done.stdout
    with Store.open_readonly(out) as store:
        trajs = list(store.iter_trajectories())
    assert len(trajs) == 3
    for traj in trajs:
        assert traj.termination != "policy_error", traj.error
        assert len(traj.steps) <= 2 and traj.rewards["total"] == traj.rewards["em"]
        assert all(s.context_tokens + len(s.completion_ids) <= 512 for s in traj.steps)
    assert json.loads((out / "eval.json").read_text())["rows"]

"""`workbench run|eval|train --harness SPEC` from a shell: real subprocesses play tests/gateway/harness_agents.py's
agent (by MODULE:FUNCTION, or by the name a `--plugin` registered) through a model gateway, score it and store it;
a spec that does not resolve is a ConfigError naming the fix."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from harness_agents import ASKED

from workbench.errors import ConfigError
from workbench.gateway import register_harness, resolve_harness
from workbench.store import Store

HERE = Path(__file__).resolve().parent
TASKS = [("a", "2+2?", "4"), ("b", "3+3?", "6"), ("c", "4+4?", "8")]


def workbench(*args: str, cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": f"{HERE}{os.pathsep}{os.environ.get('PYTHONPATH', '')}", "HF_HUB_OFFLINE": "1"}
    return subprocess.run(
        [sys.executable, "-m", "workbench", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout
    )


def write_tasks(tmp_path: Path) -> Path:
    path = tmp_path / "tasks.jsonl"
    rows = [{"id": i, "question": q, "golden_answers": [a]} for i, q, a in TASKS]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def calls(traj) -> list[dict]:
    return traj.metadata["gateway"]["calls"]


def test_run_harness_plays_scores_and_stores_each_task(tmp_path):
    tasks = write_tasks(tmp_path)
    done = workbench("run", "--harness", "harness_agents:agent", "--tasks", str(tasks), "--out", "out", cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "3 rollouts (0 ended in an error), 6 model calls, 0 forks" in done.stdout
    with Store.open_readonly(tmp_path / "out") as store:
        trajs = list(store.iter_trajectories())
    assert sorted(t.task.id for t in trajs) == ["a", "b", "c"]
    for traj in trajs:
        assert traj.role == "harness" and traj.termination == "submitted" and traj.run_id == "out"
        assert traj.reward_spec == "em" and set(traj.rewards) >= {"em", "total"}
        assert len(traj.steps) == 2 and all(s.completion_ids and s.logprobs for s in traj.steps)
        # no --temperature: the harness's own sampling applies
        assert [c["sampling_applied"]["temperature"] for c in calls(traj)] == [ASKED["temperature"]] * 2


def test_eval_harness_by_a_registered_name_through_a_plugin(tmp_path):
    """--plugin harness_agents registers `cli_agent`; eval is greedy for k=1 whatever the harness asks."""
    tasks = write_tasks(tmp_path)
    done = workbench(
        "eval", "--harness", "cli_agent", "--plugin", "harness_agents", "--dataset", str(tasks), "--out", "ev",
        cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads((tmp_path / "ev" / "eval.json").read_text())
    assert report["k"] == 1 and any(row["questions"] == 3 for row in report["rows"])
    with Store.open_readonly(tmp_path / "ev") as store:
        trajs = list(store.iter_trajectories())
    assert len(trajs) == 3 and all({"em", "f1", "total"} <= set(t.rewards) for t in trajs)
    for call in (c for t in trajs for c in calls(t)):
        assert call["sampling_requested"]["temperature"] == ASKED["temperature"]
        assert call["sampling_applied"]["temperature"] == 0.0 and call["sampling_applied"]["top_p"] == 1.0


def test_a_spec_that_does_not_resolve_is_a_config_error_naming_the_fix(tmp_path):
    tasks = write_tasks(tmp_path)
    typo = workbench(
        "run", "--harness", "cli_agnet", "--plugin", "harness_agents", "--tasks", str(tasks), "--out", "x",
        cwd=tmp_path,
    )  # fmt: skip
    assert typo.returncode != 0
    assert "no harness is registered under that name (registered: cli_agent" in typo.stderr
    assert "MODULE:FUNCTION" in typo.stderr and "register_harness" in typo.stderr
    both = workbench("run", "--harness", "cli_agent", "--env", "openenv:x:Y", "--out", "x", cwd=tmp_path)
    assert both.returncode != 0 and "--harness and --env" in both.stderr
    assert not (tmp_path / "x").exists()

    with pytest.raises(ConfigError, match=r"cannot import no_such_module .*put it on sys\.path"):
        resolve_harness("no_such_module:agent", where="--harness")
    with pytest.raises(ConfigError, match="has no attribute 'agnet'"):
        resolve_harness("harness_agents:agnet")
    with pytest.raises(ConfigError, match=r"harness_agents\.not_an_agent is not callable \(its type is int\)"):
        resolve_harness("harness_agents:not_an_agent")
    with pytest.raises(ConfigError, match="write MODULE:FUNCTION"):
        resolve_harness("harness_agents:")
    with pytest.raises(ConfigError, match="without ':'"):
        register_harness("a:b", lambda r: None)


@pytest.mark.slow
def test_train_harness_from_a_shell_samples_as_the_config_says(tmp_path):
    """`workbench train CONFIG --harness NAME --plugin MODULE`: the registration made by the plugin reaches the
    launched training process, one GRPO step trains on the harness's rollouts, and every call sampled at the
    config's temperature / top_p 1 / max_turn_tokens while the harness asked for others."""
    from workbench.models import build_tiny_model, sample_texts

    model = build_tiny_model(tmp_path / "tiny", sample_texts(), vocab_size=400, seed=0)
    tasks = write_tasks(tmp_path)
    config = tmp_path / "train.toml"
    config.write_text(
        f"""[train]
model_path = "{model}"
output_dir = "{tmp_path / "run"}"
store_path = "{tmp_path / "store"}"
tasks_path = "{tasks}"
device = "cpu"
num_generations = 2
per_device_train_batch_size = 4
max_steps = 1
max_turn_tokens = 8
max_completion_length = 64
temperature = 0.8
concurrency = 4
learning_rate = 1e-3
"""
    )
    done = workbench(
        "train", str(config), "--harness", "cli_agent", "--plugin", "harness_agents", cwd=tmp_path, timeout=600
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "training finished" in done.stdout
    assert (tmp_path / "run" / "final" / "config.json").exists()
    with Store.open_readonly(tmp_path / "store") as store:
        trajs = list(store.iter_trajectories())
    assert len(trajs) == 4 and {t.role for t in trajs} == {"harness"}
    for call in (c for t in trajs for c in calls(t)):
        assert call["sampling_requested"] == {**ASKED, "stop": [], "seed": None}
        assert call["sampling_applied"] == {"temperature": 0.8, "top_p": 1.0, "max_tokens": 8, "stop": [], "seed": None}


NOTEBOOK = """
import subprocess, sys
from workbench.gateway import register_harness
from workbench.registrations import carry

def agent(rollout):  # defined in __main__, as in a notebook cell: it travels by value
    return "answer from a cell"

register_harness("from_a_cell", agent)
child = "import sys; from workbench.registrations import install_carried; "
child += "from workbench.gateway import resolve_harness; "
child += "print(install_carried(sys.stdin.buffer.read())); print(resolve_harness('from_a_cell')(None))"
done = subprocess.run([sys.executable, "-c", child], input=carry(), capture_output=True)
sys.stdout.write(done.stdout.decode() + done.stderr.decode())
"""


def test_a_harness_registered_in_a_cell_reaches_a_launched_process(tmp_path):
    """What `launch()` (and the TrainingLauncher) hands its child: `carry()`; the child resolves the name."""
    done = subprocess.run([sys.executable, "-c", NOTEBOOK], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-2:] == ["['harness from_a_cell']", "answer from a cell"], done.stdout

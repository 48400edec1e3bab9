"""Several training processes: `python -m workbench train CONFIG` under torchrun, 2 ranks over gloo on the CPU.

Each rank runs through tests/train/rank_probe.py, which runs the command as `python -m workbench` does and
records what the rank writes, its weights after each step and the tasks it ran.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

PROBE = Path(__file__).with_name("rank_probe.py")
REPO = Path(__file__).resolve().parents[2]
RENDEZVOUS = ("RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def compact_model(tiny_model_dir: Path, to: Path) -> Path:
    """The tiny model, stamped to run NB-Agent with the compact prompt in its 512-position window."""
    import shutil

    shutil.copytree(tiny_model_dir, to)
    config = json.loads((to / "config.json").read_text())
    config["workbench_agent"] = {"prompt": "compact", "max_context_tokens": 480}
    (to / "config.json").write_text(json.dumps(config))
    return to


def write_run(tmp_path: Path, model_dir: Path, tasks) -> Path:
    from dataclasses import asdict

    from train_helpers import DOCS

    (tmp_path / "tasks.jsonl").write_text("".join(json.dumps(asdict(t)) + "\n" for t in tasks))
    (tmp_path / "corpus.jsonl").write_text(
        "".join(json.dumps({"id": str(i), "title": d["title"], "text": d["text"]}) + "\n" for i, d in enumerate(DOCS))
    )
    config = tmp_path / "train.toml"
    config.write_text(
        f"""[train]
model_path = "{model_dir}"
output_dir = "{tmp_path / "run" / "out"}"
store_path = "{tmp_path / "run" / "store"}"
tasks_path = "{tmp_path / "tasks.jsonl"}"
corpus_path = "{tmp_path / "corpus.jsonl"}"
episode_kind = "nbagent"
reward = "probe.spread"
device = "cpu"
num_generations = 2
per_device_train_batch_size = 4
max_steps = 2
save_steps = 1
max_turns = 2
max_turn_tokens = 12
max_completion_length = 96
concurrency = 2
learning_rate = 1e-3
"""
    )
    return config


def test_the_rank_comes_from_the_launchers_environment(monkeypatch):
    from workbench.train.processes import is_main_process, process_rank, world_size

    for name in RENDEZVOUS:
        monkeypatch.delenv(name, raising=False)
    assert (world_size(), process_rank(), is_main_process()) == (1, 0, True)
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("RANK", "1")
    assert (world_size(), process_rank(), is_main_process()) == (2, 1, False)


def test_metrics_rows_are_written_by_the_main_process_alone(tmp_path):
    from transformers import TrainerState

    from workbench.train.callbacks import MetricsCallback

    for main in (False, True):
        state = TrainerState(is_world_process_zero=main)
        state.global_step, state.max_steps = 1, 2
        MetricsCallback(tmp_path / "run").on_log(None, state, None, logs={"reward": 0.5})
    rows = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert [r["reward"] for r in rows] == [0.5]


def run_two_ranks(tmp_path: Path, config: Path) -> tuple[dict, dict]:
    """`torchrun --nproc_per_node 2` of `workbench train CONFIG` through the probe: each rank's record."""
    probe, watched = tmp_path / "probe", tmp_path / "run"
    probe.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in RENDEZVOUS}
    env.update(HF_HUB_OFFLINE="1", PYTHONPATH=f"{REPO}{os.pathsep}{PROBE.parent}", OMP_NUM_THREADS="1")
    torchrun = [sys.executable, "-m", "torch.distributed.run", "--nnodes", "1", "--nproc_per_node", "2"]
    rendezvous = ["--master_addr", "127.0.0.1", "--master_port", str(free_port())]
    proc = subprocess.run(
        [*torchrun, *rendezvous, str(PROBE), str(probe), str(watched), "train", str(config)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-6000:]
    rank0, rank1 = (json.loads((probe / f"rank{r}.json").read_text()) for r in (0, 1))
    return rank0, rank1


@pytest.mark.slow
def test_two_ranks_train_one_model_and_only_rank_0_writes(tmp_path, tiny_model_dir, tasks):
    config = write_run(tmp_path, compact_model(tiny_model_dir, tmp_path / "model"), tasks)
    rank0, rank1 = run_two_ranks(tmp_path, config)
    watched = tmp_path / "run"

    # gradients all-reduced: the same weights on both ranks after each step, and they moved
    assert [step for step, _ in rank0["weights"]] == [1, 2]
    assert rank0["weights"] == rank1["weights"]
    assert rank0["weights"][0][1] != rank0["weights"][1][1]

    # each rank ran its own half of each step's 8 episodes (4 tasks x 2 generations)
    assert [len(ids) for ids in rank0["tasks"]] == [4, 4] == [len(ids) for ids in rank1["tasks"]]
    ran = Counter(i for rank in (rank0, rank1) for ids in rank["tasks"] for i in ids)

    # rank 0 wrote every rank's episodes, the metrics once per step, checkpoints and the final model
    from workbench.store import Store

    with Store.open_readonly(watched / "store") as store:
        stored = Counter(t.task.id for t in store.iter_trajectories())
    assert stored == ran and sum(stored.values()) == 16
    rows = [json.loads(line) for line in (watched / "out" / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows if "reward" in r] == [1, 2]
    out = watched / "out"
    assert (out / "checkpoint-2" / "model.safetensors").exists() and (out / "final" / "config.json").exists()
    assert any(path.endswith("metrics.jsonl") for _, path in rank0["writes"])

    # rank 1 wrote nothing there but its own RNG state in each checkpoint (what resuming rank 1 reads)
    assert sorted({path for _, path in rank1["writes"]}) == [
        str(out / f"checkpoint-{s}" / "rng_state_1.pth") for s in (1, 2)
    ]


@pytest.mark.slow
def test_two_ranks_train_asynchronously_each_on_its_share(tmp_path, tiny_model_dir, tasks):
    """async_rollouts on 2 ranks (k = 1): each rank's producer runs its half of every step's batch (2 of
    the step's 4 prompts, twice each), the ranks' halves are disjoint, gradients are all-reduced (same
    weights after each step), and the logged staleness stays within 1."""
    config = write_run(tmp_path, compact_model(tiny_model_dir, tmp_path / "model"), tasks)
    config.write_text(config.read_text() + "async_rollouts = true\nmax_staleness = 1\n")
    rank0, rank1 = run_two_ranks(tmp_path, config)
    assert [step for step, _ in rank0["weights"]] == [1, 2]
    assert rank0["weights"] == rank1["weights"] and rank0["weights"][0][1] != rank0["weights"][1][1]
    for wave in range(2):  # waves 0 and 1 trained steps 1 and 2 (a wave admitted after them may have started)
        mine, theirs = rank0["tasks"][wave], rank1["tasks"][wave]
        assert len(mine) == len(theirs) == 4
        assert not set(mine) & set(theirs) and len(set(mine) | set(theirs)) == 4
    rows = [json.loads(line) for line in (tmp_path / "run" / "out" / "metrics.jsonl").read_text().splitlines()]
    stale = [r["async/staleness/max"] for r in rows if "async/staleness/max" in r]
    assert len(stale) == 2 and max(stale) <= 1

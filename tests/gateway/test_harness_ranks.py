"""Several training processes on a harness: `torchrun --nproc_per_node 2 -m workbench train CONFIG --harness
MODULE:FUNCTION` on the CPU (gloo), through tests/train/rank_probe.py as tests/train/test_processes.py runs NB-Agent.
Each rank plays its share of the step's rollouts through its own gateway; rank 0 stores them all."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
REPO, PROBE = HERE.parents[1], HERE.parent / "train" / "rank_probe.py"
RENDEZVOUS = ("RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.slow
def test_two_ranks_train_one_model_on_a_harness_and_rank_0_stores_every_rollout(tmp_path):
    from workbench.models import build_tiny_model, sample_texts
    from workbench.store import Store

    model = build_tiny_model(tmp_path / "tiny", sample_texts(), vocab_size=400, seed=0)
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(
        "".join(
            json.dumps({"id": f"t{i}", "question": f"Question {i}?", "golden_answers": [str(i)]}) + "\n"
            for i in range(8)
        )
    )
    config = tmp_path / "train.toml"
    config.write_text(
        f"""[train]
model_path = "{model}"
output_dir = "{tmp_path / "run" / "out"}"
store_path = "{tmp_path / "run" / "store"}"
tasks_path = "{tasks}"
reward = "probe.spread"
device = "cpu"
num_generations = 2
per_device_train_batch_size = 4
max_steps = 1
max_turn_tokens = 8
max_completion_length = 64
learning_rate = 1e-3
"""
    )
    probe, log = tmp_path / "probe", tmp_path / "harness_log"
    probe.mkdir()
    log.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in RENDEZVOUS}
    env.update(
        HF_HUB_OFFLINE="1", OMP_NUM_THREADS="1", HARNESS_LOG=str(log),
        PYTHONPATH=os.pathsep.join([str(REPO), str(PROBE.parent), str(HERE)]),
    )  # fmt: skip
    torchrun = [sys.executable, "-m", "torch.distributed.run", "--nnodes", "1", "--nproc_per_node", "2"]
    rendezvous = ["--master_addr", "127.0.0.1", "--master_port", str(free_port())]
    args = ["train", str(config), "--harness", "harness_agents:agent"]
    proc = subprocess.run(
        [*torchrun, *rendezvous, str(PROBE), str(probe), str(tmp_path / "run"), *args],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-6000:]
    rank0, rank1 = (json.loads((probe / f"rank{r}.json").read_text()) for r in (0, 1))
    assert [step for step, _ in rank0["weights"]] == [1] and rank0["weights"] == rank1["weights"]

    # each rank played its half of the step's 8 rollouts (4 tasks x 2), through its own gateway
    played = {
        r: [json.loads(line)["task"] for line in (log / f"rank{r}.jsonl").read_text().splitlines()] for r in (0, 1)
    }
    assert len(played[0]) == len(played[1]) == 4
    with Store.open_readonly(tmp_path / "run" / "store") as store:
        trajs = list(store.iter_trajectories())
    assert Counter(t.task.id for t in trajs) == Counter(played[0] + played[1])
    assert {t.role for t in trajs} == {"harness"} and all(len(t.metadata["gateway"]["calls"]) == 2 for t in trajs)
    assert not [p for _, p in rank1["writes"] if "store" in p]  # rank 1 wrote nothing to the store

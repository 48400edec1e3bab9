"""The child-process launcher: streams progress, survives its child crashing, stops on request."""

from __future__ import annotations

import json
import os
import signal

import pytest

from workbench.train.config import TrainConfig
from workbench.train.launch import launch

pytestmark = pytest.mark.slow


def write_inputs(tmp_path, tasks, docs):
    from dataclasses import asdict

    (tmp_path / "tasks.jsonl").write_text("".join(json.dumps(asdict(t)) + "\n" for t in tasks))
    (tmp_path / "corpus.jsonl").write_text(
        "".join(
            json.dumps({"id": str(i), "contents": f'"{d["title"]}"\n{d["text"]}'}) + "\n" for i, d in enumerate(docs)
        )
    )


def config(tmp_path, model_dir, **kw) -> TrainConfig:
    base = dict(
        model_path=str(model_dir),
        output_dir=str(tmp_path / "run"),
        tasks_path=str(tmp_path / "tasks.jsonl"),
        corpus_path=str(tmp_path / "corpus.jsonl"),
        num_generations=2,
        per_device_train_batch_size=4,
        max_steps=2,
        max_turns=2,
        max_turn_tokens=12,
        max_completion_length=64,
        learning_rate=1e-3,
    )
    return TrainConfig(**{**base, **kw})


def test_launch_streams_metrics_and_finishes(tmp_path, tiny_model_dir, tasks):
    from train_helpers import DOCS

    write_inputs(tmp_path, tasks, DOCS)
    handle = launch(config(tmp_path, tiny_model_dir))
    assert handle.status in ("starting", "running")
    rows = list(handle.stream(poll_s=0.2, timeout=300))
    assert handle.wait(30) == "finished", handle.log_tail()
    assert handle.returncode == 0
    steps = [r["step"] for r in rows if "reward" in r]
    assert steps == [1, 2]
    assert all("completions/mean_length" in r for r in rows if "reward" in r)
    assert (tmp_path / "run" / "final" / "config.json").exists()


def test_child_crash_leaves_the_parent_alive_with_an_error_tail(tmp_path, tasks):
    from train_helpers import DOCS

    write_inputs(tmp_path, tasks, DOCS)
    handle = launch(config(tmp_path, tmp_path / "no-such-model"))
    assert handle.wait(120) == "failed"
    assert handle.returncode == 1
    assert "model_path" in handle.error
    assert "ConfigError" in handle.log_tail()


def test_killed_child_reads_as_failed(tmp_path, tiny_model_dir, tasks):
    from train_helpers import DOCS

    write_inputs(tmp_path, tasks, DOCS)
    handle = launch(config(tmp_path, tiny_model_dir, max_steps=50))
    os.kill(handle.process.pid, signal.SIGKILL)
    assert handle.wait(30) == "failed"
    assert handle.returncode == -signal.SIGKILL


def test_child_ignores_the_parents_rendezvous_variables(tmp_path, tiny_model_dir, tasks, monkeypatch):
    """A parent that ran TRL's colocated vLLM carries RANK/WORLD_SIZE/MASTER_PORT (its port in use):
    the spawned child trains alone instead of failing to listen on that port."""
    import socket

    from train_helpers import DOCS

    held = socket.socket()
    held.bind(("127.0.0.1", 0))
    held.listen()
    for name, value in {
        "RANK": "0",
        "LOCAL_RANK": "0",
        "WORLD_SIZE": "1",
        "MASTER_ADDR": "127.0.0.1",
        "MASTER_PORT": str(held.getsockname()[1]),
    }.items():
        monkeypatch.setenv(name, value)
    write_inputs(tmp_path, tasks, DOCS)
    handle = launch(config(tmp_path, tiny_model_dir, max_steps=1))
    try:
        assert handle.wait(300) == "finished", handle.log_tail()
    finally:
        held.close()

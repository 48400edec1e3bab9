from __future__ import annotations

import argparse
import json

import pandas as pd
import pytest

from workbench.cli import store as store_cli
from workbench.errors import ConfigError, StoreError
from workbench.store import RunManifest, Store, format_run_summary, format_trajectory
from workbench.store.show import clip
from workbench.trajectory import Trajectory


@pytest.fixture
def filled(store, make_traj):
    trajs = [make_traj(i, hops=i % 3, reward=i / 4, role="proposer" if i == 0 else "solver") for i in range(5)]
    store.write_many(trajs)
    store.record_rewards(trajs[1].id, {"total": 0.9}, spec_name="f1")
    trajs[1].rewards, trajs[1].reward_spec = {"total": 0.9}, "f1"
    return store, trajs


def test_jsonl_round_trip(filled, tmp_path):
    store, trajs = filled
    assert store.export_jsonl(tmp_path / "out" / "t.jsonl") == 5
    lines = (tmp_path / "out" / "t.jsonl").read_text().splitlines()
    back = [Trajectory.from_dict(json.loads(line)) for line in lines]
    assert back == trajs  # including the rescored rewards
    assert store.export_jsonl(tmp_path / "s.jsonl", role="proposer") == 1


def test_parquet_readable_by_pandas(filled, tmp_path):
    store, trajs = filled
    assert store.export_parquet(tmp_path / "t.parquet", min_reward=0.5) == 4
    df = pd.read_parquet(tmp_path / "t.parquet")
    assert df["id"].tolist() == [t.id for t in trajs[1:]]
    assert df["reward"].tolist() == [0.9, 0.5, 0.75, 1.0]
    assert list(df["golden_answers"][0]) == ["Founder 1"]
    assert Trajectory.from_dict(json.loads(df["trajectory"][0])) == trajs[1]


def test_to_dataset(filled):
    store, trajs = filled
    ds = store.to_dataset(role="solver")
    assert ds.num_rows == 4
    assert ds[0]["question"] == trajs[1].task.question and ds[0]["hops"] == 1
    assert json.loads(ds[0]["rewards"]) == {"total": 0.9}
    assert store.to_dataset(role="nobody").num_rows == 0


def test_manifest(tmp_path):
    from dataclasses import dataclass

    @dataclass
    class Cfg:
        lr: float = 1e-6
        group_size: int = 8

    m = RunManifest.create(tmp_path / "run", config=Cfg(), run_id="demo", seed=3)
    loaded = RunManifest.load(tmp_path / "run")
    assert loaded == m and loaded.config == {"lr": 1e-6, "group_size": 8} and loaded.notes == {"seed": 3}
    assert RunManifest.create(tmp_path / "run2").run_id.startswith("run2-")
    with pytest.raises(StoreError, match="already exists"):
        RunManifest.create(tmp_path / "run")
    with pytest.raises(StoreError, match=r"RunManifest\.create"):
        RunManifest.load(tmp_path / "none")
    with pytest.raises(ConfigError, match="dict, dataclass"):
        RunManifest.create(tmp_path / "run3", config=[1, 2])
    # The manifest and the store share the run directory.
    Store(tmp_path / "run").close()
    assert sorted(p.name for p in (tmp_path / "run").iterdir())[:2] == ["run.json", "trajectories.sqlite"]


def test_clip_keeps_head_and_tail():
    text = "A" * 500 + "MIDDLE" + "Z" * 500
    out = clip(text, 100)
    assert out.startswith("A" * 66) and out.endswith("Z" * 34) and "chars cut" in out
    assert "MIDDLE" not in out and clip(text, 0) == text and clip("short", 100) == "short"


def test_format_trajectory(make_traj):
    traj = make_traj(3, steps=2)
    traj.steps[1].observation_text = "x" * 5000
    traj.steps[1].format_flags = ["missing_think"]
    text = format_trajectory(traj)
    for needle in (
        traj.id,
        traj.task.question,
        "step 0",
        "step 1",
        "think:",
        "code:",
        "print(search('museum 3'))",
        "tool search",
        "output:",
        "chars cut",
        "[format: missing_think]",
        '"fact 1"',
        "final answer: Founder 3",
        "termination: submitted",
        "total=1",
        "(spec em)",
        "hops=2",
    ):
        assert needle in text, needle
    assert len(text) < 4000
    assert "x" * 5000 in format_trajectory(traj, limit=0)


def test_format_run_summary(filled, store):
    s, trajs = filled
    text = format_run_summary(s)
    assert "5 trajectories" in text and trajs[4].id[:12] in text and "proposer" in text
    assert format_run_summary(s, limit=2).count("Who founded") == 2
    assert "no trajectories" in format_run_summary(s, role="critic")


def test_cli_show(filled, capsys):
    store, trajs = filled
    parser = argparse.ArgumentParser()
    store_cli.register(parser.add_subparsers())
    args = parser.parse_args(["show", str(store.run_dir)])
    assert args.func(args) == 0
    assert "5 trajectories" in capsys.readouterr().out
    args = parser.parse_args(["show", str(store.run_dir), trajs[2].id[:8], "--full"])
    assert args.func(args) == 0
    assert f"trajectory {trajs[2].id}" in capsys.readouterr().out
    args = parser.parse_args(["show", str(store.run_dir), "zzzz"])
    with pytest.raises(StoreError, match="no trajectory id starts"):
        args.func(args)

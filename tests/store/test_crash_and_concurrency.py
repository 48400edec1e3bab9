"""Real processes: SIGKILL a writer mid-run; read from another process while one writes."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from workbench.store import Store

CHILD = Path(__file__).with_name("writer_child.py")
ROOT = Path(__file__).resolve().parents[2]


def _spawn(run_dir: Path, start: int, count: int, pause: float = 0.0) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(CHILD), str(run_dir), str(start), str(count), str(pause)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )


def _kill_after(proc: subprocess.Popen[str], n: int) -> list[str]:
    """Read n committed ids, SIGKILL the writer while it keeps writing, collect what it printed."""
    ids = [proc.stdout.readline().strip() for _ in range(n)]  # type: ignore[union-attr]
    assert all(ids), proc.stderr.read()  # type: ignore[union-attr]
    os.kill(proc.pid, signal.SIGKILL)
    rest, _ = proc.communicate(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    return ids + [line for line in rest.splitlines() if line]


@pytest.mark.slow
def test_sigkill_mid_run_loses_nothing_committed(tmp_path):
    run = tmp_path / "run"
    committed: list[str] = []
    for round_, kill_at in enumerate((25, 40, 15)):  # three kills at different points, same file
        committed += _kill_after(_spawn(run, start=1000 * round_, count=100_000), kill_at)
        conn = sqlite3.connect(run / "trajectories.sqlite")
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        conn.close()
    with Store(run) as store:
        stored = set(store.query()["id"])
        assert set(committed) <= stored
        assert len(stored) - len(committed) <= 3  # at most the one in flight per kill
        for traj_id in committed:
            traj = store.get(traj_id)
            assert traj.id == traj_id and traj.steps and traj.rewards
        store.write(store.get(committed[0]))  # and it is writable again after recovery


@pytest.mark.slow
def test_reader_process_queries_while_writer_process_writes(tmp_path, make_traj):
    run = tmp_path / "run"
    Store(run).close()
    writer = _spawn(run, start=0, count=150, pause=0.01)  # spread over > 1.5 s
    reader = Store.open_readonly(run)
    counts, metric_counts = [], []
    deadline = time.monotonic() + 120
    while writer.poll() is None and time.monotonic() < deadline:
        df = reader.query(min_reward=0.0)
        counts.append(len(df))
        if len(df):
            assert reader.get(df["id"].iloc[-1]).task.id == df["task_id"].iloc[-1]
        metric_counts.append(len(reader.metrics("run-a")))
    out, err = writer.communicate(timeout=60)
    assert writer.returncode == 0, err
    assert counts == sorted(counts)  # a reader never sees the store shrink or a torn row
    assert len(set(counts)) > 2, "the reader should have seen the store grow while it was written"
    assert len(reader) == 150 == len(out.split())
    assert len(reader.metrics("run-a")) == 300
    reader.close()

"""The model's raw logprobs (trajectory schema v2) round-trip through the store, and trajectories
written before the field existed (v1) still read, with no raw logprobs."""

import json
import sqlite3
import zlib

from workbench.store import Store
from workbench.trajectory import SCHEMA_VERSION, Trajectory


def test_raw_logprobs_round_trip(store, make_traj):
    traj = make_traj(1)
    for step in traj.steps:
        step.raw_logprobs = [lp - 0.5 for lp in step.logprobs]
    store.write(traj)
    [back] = list(store.iter_trajectories())
    assert back.schema_version == SCHEMA_VERSION == 3
    assert [s.raw_logprobs for s in back.steps] == [s.raw_logprobs for s in traj.steps]
    assert [s.logprobs for s in back.steps] == [s.logprobs for s in traj.steps]


def _as_v1(run) -> None:
    """Rewrite every stored trajectory as workbench wrote it before raw logprobs existed."""
    conn = sqlite3.connect(run / "trajectories.sqlite")
    for rowid, blob in conn.execute("SELECT rowid, data FROM trajectories").fetchall():
        data = json.loads(zlib.decompress(blob))
        data["schema_version"] = 1
        for step in data["steps"]:
            del step["raw_logprobs"]
        conn.execute(
            "UPDATE trajectories SET data = ?, schema_version = 1 WHERE rowid = ?",
            (zlib.compress(json.dumps(data).encode()), rowid),
        )
    conn.commit()
    conn.close()


def test_a_v1_store_reads_with_no_raw_logprobs(tmp_path, make_traj):
    run = tmp_path / "run"
    with Store(run) as store:
        written = make_traj(2)
        store.write(written)
    _as_v1(run)
    with Store.open_readonly(run) as ro:
        [back] = list(ro.iter_trajectories())
    assert isinstance(back, Trajectory) and back.schema_version == 1
    assert all(s.raw_logprobs is None for s in back.steps)
    assert [s.logprobs for s in back.steps] == [s.logprobs for s in written.steps]
    assert [s.completion_ids for s in back.steps] == [s.completion_ids for s in written.steps]

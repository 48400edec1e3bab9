from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import pytest

from workbench.errors import ConfigError, SchemaVersionError, StoreError
from workbench.store import STORE_SCHEMA_VERSION, Store
from workbench.trajectory import Trajectory


def test_write_get_round_trip(store, make_traj):
    traj = make_traj(1)
    store.write(traj)
    got = store.get(traj.id)
    assert got == traj
    assert got.segments() == traj.segments()
    assert len(store) == 1 and traj.id in store


def test_files_and_wal_mode(tmp_path):
    with Store(tmp_path / "r") as s:
        assert s.path == tmp_path / "r" / "trajectories.sqlite"
        assert s._conn().execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert s._conn().execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL
    with Store(tmp_path / "r", synchronous="normal") as s:
        assert s._conn().execute("PRAGMA synchronous").fetchone()[0] == 1
    with pytest.raises(StoreError, match="FULL"):
        Store(tmp_path / "r", synchronous="off")


def test_blob_is_compressed(store, make_traj):
    traj = make_traj(1, steps=6)
    store.write(traj)
    raw = len(Trajectory.to_dict(traj).__repr__())
    blob = store._conn().execute("SELECT length(data) FROM trajectories").fetchone()[0]
    assert blob < raw / 2


def test_rewrite_same_id_updates(store, make_traj):
    traj = make_traj(1)
    store.write(traj)
    traj.final_answer = "changed"
    store.write(traj)
    assert len(store) == 1
    assert store.get(traj.id).final_answer == "changed"
    assert len(store.reward_history(traj.id)) == 1  # same rewards re-written: no new history row


def test_write_many_is_one_transaction(store, make_traj):
    good = [make_traj(i) for i in range(3)]
    assert store.write_many(good) == 3
    with pytest.raises(StoreError, match="takes a Trajectory"):
        store.write_many([make_traj(10), {"not": "a trajectory"}])  # type: ignore[list-item]
    assert len(store) == 3


def test_get_missing_and_prefix(store, make_traj):
    a, b = make_traj(1), make_traj(2)
    a.id, b.id = "abc123", "abd456"
    store.write_many([a, b])
    assert store.resolve_id("abc") == "abc123"
    with pytest.raises(StoreError, match="ambiguous"):
        store.resolve_id("ab")
    with pytest.raises(StoreError, match="no trajectory id starts"):
        store.resolve_id("zz")
    with pytest.raises(StoreError, match=r"store\.query"):
        store.get("nope")


def test_query_filters(store, make_traj):
    store.write_many(
        [
            make_traj(
                i,
                hops=i % 3,
                reward=i / 10,
                role="proposer" if i % 2 else "solver",
                termination="max_steps" if i == 4 else "submitted",
                policy={"name": "tiny", "backend": "hf"} if i < 5 else "scripted",
            )
            for i in range(10)
        ]
    )
    df = store.query()
    assert len(df) == 10 and "data" not in df.columns
    assert list(df["id"]) == [t.id for t in store.iter_trajectories()]
    assert set(store.query(role="proposer")["role"]) == {"proposer"}
    assert store.query(min_reward=0.5, max_reward=0.7)["reward"].tolist() == [0.5, 0.6, 0.7]
    assert len(store.query(hops=[0, 1])) == 7
    assert store.query(termination="max_steps")["task_id"].tolist() == ["task-4"]
    assert len(store.query(policy="tiny")) == 5
    assert len(store.query(limit=3)) == 3
    assert store.query(hops=2, role="solver")["task_id"].tolist() == ["task-2", "task-8"]
    assert df["rewards"][3] == {"outcome": 0.3, "format": 0.0, "total": 0.3}
    assert [t.task.id for t in store.iter_trajectories(min_reward=0.8)] == ["task-8", "task-9"]
    with pytest.raises(ConfigError, match="unknown trajectory filter"):
        store.query(rol="solver")
    with pytest.raises(ConfigError, match="limit"):
        store.query(limit=-1)


def test_query_empty_store(store):
    df = store.query()
    assert len(df) == 0 and "reward" in df.columns


def test_unscored_trajectory(store, make_traj):
    traj = make_traj(1, reward=None, hops=None)
    store.write(traj)
    row = store.query().iloc[0]
    assert row["rewards"] == {} and row["reward"] != row["reward"]  # NaN
    assert store.reward_history(traj.id).empty
    assert store.get(traj.id).rewards == {}


def test_record_rewards_and_history(store, make_traj):
    traj = make_traj(1, reward=0.0)
    store.write(traj)
    store.record_rewards(
        traj.id,
        {"f1": 0.5, "total": 0.5},
        spec_name="f1",
        spec_json={"components": ["f1"]},
        provenance={"author": "alice", "reason": "EM too strict", "ticket": 7},
    )
    got = store.get(traj.id)
    assert got.rewards == {"f1": 0.5, "total": 0.5} and got.reward_spec == "f1"
    assert store.query(min_reward=0.4)["id"].tolist() == [traj.id]
    hist = store.reward_history(traj.id)
    assert hist["spec_name"].tolist() == ["em", "f1"]
    assert hist["author"].tolist() == ["rollout", "alice"]
    assert hist["total"].tolist() == [0.0, 0.5]
    assert hist["provenance"][1] == {"ticket": 7}
    assert hist["spec_json"][1] == '{"components": ["f1"]}'
    with pytest.raises(StoreError, match="write it before"):
        store.record_rewards("missing", {"total": 1.0}, spec_name="x")


def test_the_same_rewards_recorded_again_without_who_or_why_complete_the_last_entry(store, make_traj):
    traj = make_traj(2, reward=1.0)
    store.write(traj)  # history: the rollout's own entry
    store.record_rewards(traj.id, traj.rewards, spec_name="em", spec_json='{"spec": "em"}', provenance={"run": 3})
    [entry] = store.reward_records(traj.id)  # no duplicate row without author or reason
    assert (entry["author"], entry["spec_json"], entry["provenance"]) == ("rollout", '{"spec": "em"}', {"run": 3})
    store.record_rewards(traj.id, traj.rewards, spec_name="em", provenance={"author": "bob", "reason": "checked"})
    assert [r["author"] for r in store.reward_records(traj.id)] == ["rollout", "bob"]  # who and why: a new entry


def test_lineage_children_and_origin(store, make_traj):
    proposer = make_traj(0, role="proposer")
    solvers = [make_traj(i, origin=proposer.id) for i in range(1, 4)]
    other = make_traj(9)
    store.write_many([proposer, *solvers, other])
    assert [t.id for t in store.children(proposer.id)] == [s.id for s in solvers]
    assert store.origin(solvers[0].id).id == proposer.id
    assert store.origin(proposer.id) is None
    assert store.query(origin=proposer.id)["id"].tolist() == [s.id for s in solvers]
    dangling = make_traj(10, origin="not-stored")
    store.write(dangling)
    assert store.origin(dangling.id) is None


def test_metrics_and_events(store):
    store.log_metrics("r1", 0, {"loss": 2.0, "kl": 0.0})
    store.log_metrics("r1", 1, {"loss": 1.5, "kl": 0.1})
    store.log_metrics("r2", 0, {"loss": 9.0})
    df = store.metrics("r1")
    assert len(df) == 4
    wide = df.pivot_table(index="step", columns="name", values="value")
    assert wide["loss"].tolist() == [2.0, 1.5]
    assert store.metrics(name="loss")["value"].tolist() == [2.0, 1.5, 9.0]
    store.log_event("r1", "iteration_start", {"iteration": 1})
    ev = store.events("r1")
    assert ev["kind"].tolist() == ["iteration_start"] and ev["payload"][0] == {"iteration": 1}


def test_readonly_cannot_write_and_missing_store(tmp_path, make_traj):
    with pytest.raises(StoreError, match="no store at"):
        Store.open_readonly(tmp_path / "nothing")
    Store(tmp_path / "r").close()
    with Store.open_readonly(tmp_path / "r") as ro:
        assert len(ro) == 0
        with pytest.raises(StoreError, match="read-only"):
            ro.write(make_traj(1))
        with pytest.raises(StoreError, match="read-only"):
            ro.log_metrics("r", 0, {"x": 1.0})


def test_newer_schema_refused(tmp_path):
    Store(tmp_path / "r").close()
    conn = sqlite3.connect(tmp_path / "r" / "trajectories.sqlite")
    conn.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(STORE_SCHEMA_VERSION + 1),))
    conn.commit()
    conn.close()
    with pytest.raises(SchemaVersionError, match="upgrade workbench"):
        Store(tmp_path / "r")
    with pytest.raises(SchemaVersionError, match="upgrade workbench"):
        Store.open_readonly(tmp_path / "r")


def test_not_a_database(tmp_path):
    (tmp_path / "r").mkdir()
    (tmp_path / "r" / "trajectories.sqlite").write_text("hello, this is not sqlite" * 100)
    with pytest.raises(StoreError, match="check the path"):
        Store(tmp_path / "r")


def test_closed_store(tmp_path):
    s = Store(tmp_path / "r")
    s.close()
    with pytest.raises(StoreError, match="closed"):
        len(s)


def test_writer_thread_and_reader_threads_share_a_store(store, make_traj):
    errors: list[BaseException] = []
    done = threading.Event()

    def writer() -> None:
        try:
            for i in range(60):
                store.write(make_traj(i))
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)
        finally:
            done.set()

    def reader() -> None:
        try:
            last = 0
            while not done.is_set():
                n = len(store.query(role="solver"))
                assert n >= last
                last = n
        except BaseException as exc:  # pragma: no cover
            errors.append(exc)

    threads = [threading.Thread(target=writer), *(threading.Thread(target=reader) for _ in range(2))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors
    assert len(store) == 60
    assert len(store._conns) == 4  # the test thread + one per worker thread


def test_readonly_in_unwritable_directory(tmp_path, make_traj):
    """A finished run in a directory we cannot write (read-only mount) still opens."""
    import os
    import shutil
    import subprocess
    import sys

    if os.geteuid() != 0 or not shutil.which("setpriv"):
        pytest.skip("needs root and setpriv to read as another uid")
    import tempfile

    base = Path(tempfile.mkdtemp())  # pytest's tmp root is 0700: unreachable for another uid
    os.chmod(base, 0o755)
    run = base / "r"
    with Store(run) as s:
        s.write(make_traj(1))
    os.chmod(run, 0o555)
    os.chmod(run / "trajectories.sqlite", 0o444)
    code = (
        "import sys; from workbench.store import Store; s = Store.open_readonly(sys.argv[1]); "
        "print(len(s), s.query()['task_id'][0])"
    )
    out = subprocess.run(
        ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", sys.executable, "-c", code, str(run)],
        capture_output=True,
        text=True,
        cwd=Path(__file__).resolve().parents[2],
        timeout=60,
    )
    os.chmod(run, 0o755)
    shutil.rmtree(base)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["1", "task-1"]


def test_rescore_while_iterating(store, make_traj):
    """The rescoring pattern: stream trajectories and record new rewards on the same thread."""
    store.write_many([make_traj(i, reward=0.0) for i in range(30)])
    for traj in store.iter_trajectories():
        store.record_rewards(traj.id, {"total": 1.0}, spec_name="lenient")
    assert store.query(min_reward=1.0).shape[0] == 30
    assert all(len(store.reward_history(t)) == 2 for t in store.query()["id"])


def test_run_filter(store, make_traj):
    store.write_many([make_traj(1, run_id="a"), make_traj(2, run_id="b"), make_traj(3, run_id="b")])
    assert store.query(run="b")["task_id"].tolist() == ["task-2", "task-3"]
    assert len(store.query(run=["a", "b"])) == 3


from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    question=st.text(),
    think=st.text(),
    answer=st.one_of(st.none(), st.text()),
    meta=st.dictionaries(st.text(min_size=1), st.one_of(st.integers(), st.text(), st.none()), max_size=4),
    logprobs=st.lists(st.floats(allow_nan=False, allow_infinity=False), max_size=20),
)
def test_round_trip_property(tmp_path_factory, make_traj, question, think, answer, meta, logprobs):
    traj = make_traj(1, steps=1)
    traj.task.question, traj.steps[0].think, traj.final_answer = question, think, answer
    traj.metadata = meta
    traj.steps[0].logprobs = logprobs
    with Store(tmp_path_factory.mktemp("prop")) as s:
        s.write(traj)
        assert s.get(traj.id) == traj
        assert s.query()["question"][0] == question

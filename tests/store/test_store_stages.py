"""Phase, iteration and training step as the lineage names them: summary columns and filters, on
a new store, on a v2 store opened for writing (migrated) and on one opened read-only (in memory)."""

import sqlite3

from workbench.store import STORE_SCHEMA_VERSION, Store

STAGES = [
    {"phase": "solver_update", "train_step": 1},
    {"phase": "solver_update", "train_step": 2},
    {"iteration": 0},  # a propose-phase probe: the evolve loop names only the iteration
    {"phase": "proposer_update", "train_step": True, "iteration": "1"},  # not numbers: not stages
    {},
]


def _write(run, make_traj):
    with Store(run) as store:
        for i, lineage in enumerate(STAGES):
            traj = make_traj(i)
            traj.lineage.update(lineage)
            store.write(traj)
        return store.columns(("id",))["id"]


def _check(store, ids):
    cols = store.columns(("id", "phase", "iteration", "train_step"))
    assert cols["phase"] == ["solver_update", "solver_update", None, "proposer_update", None]
    assert cols["iteration"] == [None, None, 0, None, None]
    assert cols["train_step"] == [1, 2, None, None, None]
    assert store.query(phase="solver_update", train_step=2)["id"].tolist() == [ids[1]]
    assert store.columns(("id",), iteration=0)["id"] == [ids[2]]
    assert "train_step" not in store.query().columns  # its frame keeps the shape its callers know


def test_stage_columns_and_filters(tmp_path, make_traj):
    ids = _write(tmp_path / "run", make_traj)
    with Store(tmp_path / "run") as store:
        _check(store, ids)


def _as_v2(run) -> None:
    """The store as workbench wrote it before the stage columns."""
    conn = sqlite3.connect(run / "trajectories.sqlite")
    for name in ("phase", "iteration", "train_step"):
        conn.execute(f"ALTER TABLE trajectories DROP COLUMN {name}")
    conn.execute("UPDATE meta SET value = '2' WHERE key = 'schema_version'")
    conn.commit()
    conn.close()


def _version(run) -> str:
    conn = sqlite3.connect(run / "trajectories.sqlite")
    version = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0]
    conn.close()
    return version


def test_a_v2_store_opened_for_writing_is_migrated(tmp_path, make_traj):
    run = tmp_path / "run"
    ids = _write(run, make_traj)
    _as_v2(run)
    with Store(run) as store:
        _check(store, ids)
    assert _version(run) == str(STORE_SCHEMA_VERSION)


def test_a_v2_store_opened_read_only_reads_its_stages_in_memory(tmp_path, make_traj):
    run = tmp_path / "run"
    ids = _write(run, make_traj)
    _as_v2(run)
    with Store.open_readonly(run) as store:
        _check(store, ids)
        assert _version(run) == "2"  # the file is left as it is
        conn = sqlite3.connect(run / "trajectories.sqlite")  # an older writer adds a row meanwhile
        columns = [r[1] for r in conn.execute("PRAGMA table_info(trajectories)") if r[1] != "id"]
        conn.execute(
            f"INSERT INTO trajectories (id, {', '.join(columns)}) "
            f"SELECT 'late', {', '.join(columns)} FROM trajectories WHERE id = ?",
            (ids[0],),
        )
        conn.commit()
        conn.close()
        assert store.columns(("id",), train_step=1)["id"] == [ids[0], "late"]
        with Store(run) as writer:  # a newer writer migrates the file under the reader
            late = make_traj(9)
            late.lineage["train_step"] = 7
            writer.write(late)
        assert store.columns(("id",), train_step=7)["id"] == [late.id]


def _as_v3(run) -> None:
    """The store as workbench wrote it before host calls had their own word (v3: `num_tool_calls`)."""
    conn = sqlite3.connect(run / "trajectories.sqlite")
    conn.execute("ALTER TABLE trajectories RENAME COLUMN num_host_calls TO num_tool_calls")
    conn.execute("UPDATE meta SET value = '3' WHERE key = 'schema_version'")
    conn.commit()
    conn.close()


def test_a_v3_store_reads_its_host_call_counts_read_only_and_is_renamed_for_writing(tmp_path, make_traj):
    run = tmp_path / "run"
    _write(run, make_traj)
    with Store(run) as store:
        counts = store.query()["num_host_calls"].tolist()
    assert sum(counts) > 0  # make_traj records host calls
    _as_v3(run)
    with Store.open_readonly(run) as store:
        assert store.query()["num_host_calls"].tolist() == counts
        assert store.columns(("num_host_calls",))["num_host_calls"] == counts
    assert _version(run) == "3"  # a read-only open leaves the file as it was
    with Store(run) as store:
        assert store.query()["num_host_calls"].tolist() == counts
    assert _version(run) == str(STORE_SCHEMA_VERSION)

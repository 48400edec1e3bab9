"""The store's SQLite schema, connection settings and version check.

Durability: WAL with `synchronous=FULL`. WAL alone already survives a killed writer (a commit is
in the WAL once `COMMIT` returns, and an unfinished one is ignored on recovery); FULL adds an
fsync of the WAL per commit, so a committed trajectory also survives power loss or an OS crash.
A trajectory costs seconds of model time; FULL cost 0-15% of the write rate in our runs (see
`bench/bench_store.py`), so the insurance is cheap. Pass `synchronous="NORMAL"` to trade it away.
"""

from __future__ import annotations

import os
import sqlite3
import time
from pathlib import Path

from workbench.errors import SchemaVersionError, StoreError
from workbench.store import _search, _stages
from workbench.store._rows import decode

STORE_SCHEMA_VERSION = 4  # v2: the full-text index (_search.py); v3: the stage columns (_stages.py);
"""The schema version this code writes; a store of a newer version is refused with a clear error."""
# v4: num_tool_calls is num_host_calls (the glossary's word for a kernel's calls of host tools)
RENAMED_COLUMNS = {"num_host_calls": "num_tool_calls"}  # column -> its name before
DB_NAME = "trajectories.sqlite"
"""The store's SQLite file under a run directory."""
BUSY_TIMEOUT_MS = 30_000

DDL = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS trajectories (
    id TEXT PRIMARY KEY,
    run_id TEXT NOT NULL DEFAULT '',
    role TEXT NOT NULL DEFAULT '',
    task_id TEXT,
    question TEXT,
    hops INTEGER,
    termination TEXT,
    reward REAL,
    rewards_json TEXT NOT NULL DEFAULT '{}',
    reward_spec TEXT,
    num_steps INTEGER NOT NULL DEFAULT 0,
    num_host_calls INTEGER NOT NULL DEFAULT 0,
    final_answer TEXT,
    error TEXT,
    policy TEXT,
    origin_id TEXT,
    parent_id TEXT,
    phase TEXT,
    iteration INTEGER,
    train_step INTEGER,
    started_at REAL,
    ended_at REAL,
    written_at REAL NOT NULL,
    schema_version INTEGER NOT NULL,
    codec TEXT NOT NULL,
    data BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS trajectories_run ON trajectories(run_id, role);
CREATE INDEX IF NOT EXISTS trajectories_origin ON trajectories(origin_id);
CREATE INDEX IF NOT EXISTS trajectories_parent ON trajectories(parent_id);
CREATE INDEX IF NOT EXISTS trajectories_reward ON trajectories(reward);
CREATE INDEX IF NOT EXISTS trajectories_order ON trajectories(started_at, id);
CREATE TABLE IF NOT EXISTS rewards_history (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    trajectory_id TEXT NOT NULL REFERENCES trajectories(id) ON DELETE CASCADE,
    spec_name TEXT,
    spec_json TEXT,
    rewards_json TEXT NOT NULL,
    total REAL,
    created_at REAL NOT NULL,
    author TEXT,
    reason TEXT,
    provenance_json TEXT NOT NULL DEFAULT '{}'
);
CREATE INDEX IF NOT EXISTS rewards_history_traj ON rewards_history(trajectory_id, seq);
CREATE TABLE IF NOT EXISTS metrics (
    run_id TEXT NOT NULL,
    step INTEGER NOT NULL,
    name TEXT NOT NULL,
    value REAL,
    time REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS metrics_run ON metrics(run_id, name, step);
CREATE TABLE IF NOT EXISTS events (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id TEXT NOT NULL,
    kind TEXT NOT NULL,
    trajectory_id TEXT,
    payload_json TEXT NOT NULL DEFAULT '{}',
    time REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS events_run ON events(run_id, kind, seq);
"""


def connect(path: Path, *, readonly: bool, synchronous: str) -> sqlite3.Connection:
    """Open one connection with the store's settings (one per thread; see `Store`)."""
    if readonly:
        if not path.exists():
            raise StoreError(
                f"no store at {path}; pass a run directory that a run has written to, "
                "or open it with Store(run_dir) to create one"
            )
        uri = f"{path.resolve().as_uri()}?mode=ro"
        # A WAL reader needs a -shm file it can create or share. With no -wal file there is no
        # live writer, so in a directory we cannot write (a read-only mount, another user's run)
        # the file is safe to open as immutable.
        if not path.with_name(path.name + "-wal").exists() and not os.access(path.parent, os.W_OK):
            uri += "&immutable=1"
        conn = sqlite3.connect(uri, uri=True, timeout=BUSY_TIMEOUT_MS / 1000, check_same_thread=False)
    else:
        path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(
            path, timeout=BUSY_TIMEOUT_MS / 1000, check_same_thread=False, isolation_level=None
        )  # autocommit; we issue BEGIN/COMMIT ourselves
    try:
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        if not readonly:
            mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
            if mode.lower() != "wal":
                raise StoreError(
                    f"{path}: SQLite refused WAL mode (got {mode!r}); put the run "
                    "directory on a local filesystem (WAL needs shared memory)"
                )
            conn.execute(f"PRAGMA synchronous = {synchronous}")
            conn.execute("PRAGMA foreign_keys = ON")
    except sqlite3.DatabaseError as exc:
        conn.close()
        raise StoreError(f"{path} is not a readable workbench store ({exc}); check the path") from exc
    return conn


def ensure_schema(conn: sqlite3.Connection, path: Path, *, readonly: bool) -> None:
    """Create the tables on first use and bring an older store up to this version (v1 -> v2 builds
    the full-text index over the trajectories already stored, v2 -> v3 adds and fills the stage
    columns, v3 -> v4 renames `RENAMED_COLUMNS`); refuse a store written by a newer workbench. A
    read-only store is left as it is (`Store` then builds the index and the stages in memory when they
    are asked for, and reads renamed columns by their old names)."""
    try:
        if readonly:
            _check_version(_stored_version(conn), path)
            return
        conn.execute("BEGIN IMMEDIATE")
        try:
            _check_version(_stored_version(conn), path)
            for statement in DDL.split(";"):
                if statement.strip():
                    conn.execute(statement)
            if not _search.has_index(conn):
                build_index(conn)
            if not _stages.has_columns(conn):
                _stages.add_columns(conn)
            for new, old in legacy_reads(conn).items():
                conn.execute(f"ALTER TABLE main.trajectories RENAME COLUMN {old} TO {new}")
            conn.execute("INSERT OR REPLACE INTO meta VALUES ('schema_version', ?)", (str(STORE_SCHEMA_VERSION),))
            conn.execute("INSERT OR IGNORE INTO meta VALUES ('created_at', ?)", (str(time.time()),))
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
    except sqlite3.DatabaseError as exc:
        raise StoreError(f"{path} is not a workbench store ({exc}); check the path") from exc


def legacy_reads(conn: sqlite3.Connection) -> dict[str, str]:
    """Each renamed column this store still has under its old name (a store written before v4), as
    `{column: old name}`: a read-only connection selects the old name, a writable one renames it."""
    names = {row[1] for row in conn.execute("PRAGMA main.table_info(trajectories)")}
    return {new: old for new, old in RENAMED_COLUMNS.items() if old in names and new not in names}


def _stored_version(conn: sqlite3.Connection) -> int:
    """The schema version a store was written with; 0 for an empty file."""
    if conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'meta'").fetchone() is None:
        return 0
    row = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    return int(row[0]) if row else 0


def _check_version(version: int, path: Path) -> None:
    if version > STORE_SCHEMA_VERSION:
        raise SchemaVersionError(
            f"{path} has store schema v{version}, newer than this workbench's v{STORE_SCHEMA_VERSION}; "
            "upgrade workbench (pip install -U workbench) to open it"
        )


def build_index(conn: sqlite3.Connection, schema: str = "main") -> int:
    """Create the full-text index (`_search.py`) in `schema` and fill it from every stored
    trajectory: the migration of a store written before it existed (`temp` for a store opened
    read-only). Returns the rows indexed."""
    conn.execute(_search.FTS_DDL.format(schema=schema))
    insert = _search.FTS_INSERT.format(schema=schema)
    count = 0
    for rowid, codec, blob in conn.execute("SELECT rowid, codec, data FROM main.trajectories"):
        conn.execute(insert, (rowid, *_search.document(decode(codec, blob))))
        count += 1
    return count

"""Where a trajectory sits in training, as its lineage names it: `phase` (e.g. "solver_update"),
`iteration` (an evolve iteration) and `train_step` (the trainer's step that used it). They are
summary columns, so a list filters on them without decoding a trajectory.

    store.query(phase="solver_update", train_step=3)          # filters, as any summary column's
    store.columns(("id", "phase", "iteration", "train_step"))  # the values (`query` leaves them out)

A store written before they existed (schema v2) gets the columns, filled from its trajectories,
when it is opened for writing. Opened read-only, it reads them from a table built in the
connection's `temp` schema (as the full-text index is), topped up with rows written since.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from workbench.store._rows import decode, stage

STAGE_COLUMNS = ("phase", "iteration", "train_step")
TEMP_TABLE = "trajectory_stages"
_DDL = (
    f"CREATE TABLE IF NOT EXISTS temp.{TEMP_TABLE} "
    "(id INTEGER PRIMARY KEY, phase TEXT, iteration INTEGER, train_step INTEGER)"
)


def _stored_stage(codec: str, blob: bytes) -> tuple[Any, ...]:
    lineage = decode(codec, blob).get("lineage")
    return tuple(stage(lineage if isinstance(lineage, dict) else {}).values())


def has_columns(conn: sqlite3.Connection) -> bool:
    names = {row[1] for row in conn.execute("PRAGMA main.table_info(trajectories)")}
    return set(STAGE_COLUMNS) <= names


def add_columns(conn: sqlite3.Connection) -> int:
    """Add the stage columns to a store written before them and fill them (inside the caller's
    transaction). Returns the rows filled."""
    for name, kind in zip(STAGE_COLUMNS, ("TEXT", "INTEGER", "INTEGER"), strict=True):
        conn.execute(f"ALTER TABLE main.trajectories ADD COLUMN {name} {kind}")
    rows = conn.execute("SELECT rowid, codec, data FROM main.trajectories").fetchall()
    filled = [(*_stored_stage(codec, blob), rowid) for rowid, codec, blob in rows]
    conn.executemany("UPDATE main.trajectories SET phase = ?, iteration = ?, train_step = ? WHERE rowid = ?", filled)
    return len(filled)


def expressions(conn: sqlite3.Connection) -> dict[str, str]:
    """How this connection's SQL reads each stage column: the column itself, or (a read-only store
    written before them) a lookup in the temp table, brought up to date first."""
    if has_columns(conn):
        return {name: name for name in STAGE_COLUMNS}
    conn.execute(_DDL)
    missing = conn.execute(
        f"SELECT rowid, codec, data FROM main.trajectories WHERE rowid NOT IN (SELECT id FROM temp.{TEMP_TABLE})"
    ).fetchall()
    conn.executemany(
        f"INSERT INTO temp.{TEMP_TABLE} VALUES (?, ?, ?, ?)",
        [(rowid, *_stored_stage(codec, blob)) for rowid, codec, blob in missing],
    )
    if conn.in_transaction:  # the insert's implicit transaction would pin this reader's snapshot
        conn.commit()
    lookup = f"(SELECT {{0}} FROM temp.{TEMP_TABLE} s WHERE s.id = trajectories.rowid)"
    return {name: lookup.format(name) for name in STAGE_COLUMNS}

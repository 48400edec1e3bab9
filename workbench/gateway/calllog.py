"""`CallLog`: each gateway call appended to SQLite (WAL) before its reply, one row of deltas per call.

    log = CallLog("runs/mine/gateway_calls.sqlite")
    log.append(rollout_id, step, record, extends=(parent_step, observation_ids))
    log.steps(rollout_id)        # the rollout's Steps rebuilt from its rows (after a crash, too)

Writing a whole trajectory per call costs its size every call (quadratic in turns); a row holds only
the call's new Step (its `prompt_ids` only when it starts a segment), its `CallRecord`, and the
tokens it appended to its parent's `observation_ids`, so a call costs its own size. The trajectory
store gets the whole trajectory when a rollout opens and ends; the log is what makes every call
durable before its reply in between.
"""

from __future__ import annotations

import dataclasses
import json
import sqlite3
import threading
from pathlib import Path
from typing import Any

from workbench.gateway.state import CallRecord
from workbench.trajectory import Step

__all__ = ["CALL_LOG_NAME", "CallLog"]

CALL_LOG_NAME = "gateway_calls.sqlite"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS calls (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    rollout_id TEXT NOT NULL,
    row_json TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS calls_rollout ON calls (rollout_id, seq);
"""


class CallLog:
    """An append-only log of gateway calls; one SQLite connection per thread."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._local = threading.local()
        self._conns: list[sqlite3.Connection] = []
        self._lock = threading.Lock()
        self._conn().executescript(_SCHEMA)

    def _conn(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=FULL")
            self._local.conn = conn
            with self._lock:
                self._conns.append(conn)
        return conn

    def append(
        self, rollout_id: str, step: Step | None, record: CallRecord, extends: tuple[int, list[int]] | None = None
    ) -> None:
        """Commit one call's row (durable when this returns)."""
        row = {
            "step": None if step is None else {f.name: getattr(step, f.name) for f in dataclasses.fields(Step)},
            "record": dataclasses.asdict(record),
            "extends": None if extends is None else [extends[0], extends[1]],
        }
        self._conn().execute("INSERT INTO calls (rollout_id, row_json) VALUES (?, ?)", (rollout_id, json.dumps(row)))

    def rows(self, rollout_id: str) -> list[dict[str, Any]]:
        cur = self._conn().execute("SELECT row_json FROM calls WHERE rollout_id = ? ORDER BY seq", (rollout_id,))
        return [json.loads(r[0]) for r in cur]

    def steps(self, rollout_id: str) -> list[Step]:
        """The rollout's Steps as its calls left them (observation ids filled in from later calls)."""
        steps: list[Step] = []
        for row in self.rows(rollout_id):
            if row["extends"] is not None:
                parent, ids = row["extends"]
                steps[parent].observation_ids = list(ids)
            if row["step"] is not None:
                steps.append(Step(**row["step"]))
        return steps

    def close(self) -> None:
        with self._lock:
            for conn in self._conns:
                conn.close()
            self._conns.clear()

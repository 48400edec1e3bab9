"""`Store`: the crash-safe SQLite trajectory store every layer writes to and notebooks read.

    with Store("runs/demo") as store:
        store.write(traj)                         # committed when it returns
        df = store.query(role="solver", min_reward=0.5)
        store.record_rewards(traj.id, {"total": 1.0}, spec_name="f1", provenance={"author": "me"})

    live = Store.open_readonly("runs/demo")       # from a notebook while the run writes

Each trajectory is one row: summary columns for queries plus the full `Trajectory.to_dict()` as
zlib-compressed JSON. Rewards live in their own columns and are authoritative: `record_rewards`
updates them (and appends to `rewards_history`) without rewriting the blob, and `get` overlays
them. One SQLite connection per thread, so a writer thread and reader threads can share a Store.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from workbench.errors import ConfigError, StoreError
from workbench.safetext import safe_json, safe_text
from workbench.store import _schema, _search, _stages
from workbench.store._filters import SUMMARY_COLUMNS, select, where
from workbench.store._rows import BLOB_COLUMNS, HISTORY_INSERT, UPSERT, decode_metadata, from_row, to_row
from workbench.trajectory import Trajectory

if TYPE_CHECKING:
    import datasets
    import pandas as pd


class Store:
    """A run's trajectories, rewards history, metrics and events in `<run_dir>/trajectories.sqlite`."""

    def __init__(self, run_dir: str | os.PathLike[str], *, synchronous: str = "FULL", _readonly: bool = False) -> None:
        if synchronous.upper() not in ("FULL", "NORMAL", "EXTRA"):
            raise StoreError(f"synchronous={synchronous!r}; use 'FULL' (default) or 'NORMAL'")
        self.run_dir = Path(run_dir)
        self.path = self.run_dir / _schema.DB_NAME
        self.readonly = _readonly
        self._synchronous = synchronous.upper()
        self._local = threading.local()
        self._conns: list[sqlite3.Connection] = []
        self._lock = threading.Lock()
        self._closed = False
        _schema.ensure_schema(self._conn(), self.path, readonly=self.readonly)

    @classmethod
    def open_readonly(cls, run_dir: str | os.PathLike[str]) -> Store:
        """Open for reading only (`mode=ro`): safe from a notebook while a run is writing."""
        return cls(run_dir, _readonly=True)

    # -- connections -----------------------------------------------------------------------
    def _conn(self) -> sqlite3.Connection:
        if self._closed:
            raise StoreError(f"store {self.path} is closed; open a new Store(run_dir)")
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = _schema.connect(self.path, readonly=self.readonly, synchronous=self._synchronous)
            self._local.conn = conn
            with self._lock:
                self._conns.append(conn)
        return conn

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        if self.readonly:
            raise StoreError(f"store {self.path} was opened read-only; open Store(run_dir) to write")
        conn = self._conn()
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield conn
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")

    def close(self) -> None:
        """Close every connection this Store opened (in any thread)."""
        with self._lock:
            for conn in self._conns:
                conn.close()
            self._conns.clear()
            self._closed = True

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __len__(self) -> int:
        count: int = self._conn().execute("SELECT COUNT(*) FROM trajectories").fetchone()[0]
        return count

    def __repr__(self) -> str:
        mode = "read-only" if self.readonly else "read-write"
        return f"Store({str(self.run_dir)!r}, {mode})"

    # -- trajectories ----------------------------------------------------------------------
    def write(self, traj: Trajectory) -> None:
        """Insert or replace one trajectory in its own transaction; durable when this returns.

        Text that is not valid Unicode is stored with U+FFFD and `metadata["sanitized"] = True`
        (`safe_trajectory`); a value JSON cannot hold raises `StoreError` naming it."""
        self.write_many([traj])

    def write_many(self, trajs: Iterable[Trajectory]) -> int:
        """Write several trajectories in one transaction (all or none). Returns how many."""
        rows = [to_row(t) for t in trajs]
        now = time.time()
        with self._transaction() as conn:
            for row in rows:
                before = conn.execute(
                    "SELECT rewards_json, reward_spec FROM trajectories WHERE id = ?", (row["id"],)
                ).fetchone()
                rowid = conn.execute(UPSERT, row).fetchone()[0]
                _search.index_row(conn, rowid, row["document"], replaced=before is not None)
                # History records each new reward assignment, not every re-write of the same one.
                if row["rewards_json"] != "{}" and before != (row["rewards_json"], row["reward_spec"]):
                    conn.execute(
                        HISTORY_INSERT,
                        (
                            row["id"],
                            row["reward_spec"],
                            None,
                            row["rewards_json"],
                            row["reward"],
                            now,
                            "rollout",
                            "written with the trajectory",
                            "{}",
                        ),
                    )
        return len(rows)

    def get(self, traj_id: str) -> Trajectory:
        row = self._conn().execute(f"SELECT {BLOB_COLUMNS} FROM trajectories WHERE id = ?", (traj_id,)).fetchone()
        if row is None:
            raise StoreError(
                f"no trajectory {traj_id!r} in {self.path}; list ids with "
                "store.query() or resolve a prefix with store.resolve_id()"
            )
        return from_row(row)

    def __contains__(self, traj_id: object) -> bool:
        return self._conn().execute("SELECT 1 FROM trajectories WHERE id = ?", (traj_id,)).fetchone() is not None

    def resolve_id(self, prefix: str) -> str:
        """The full id of the one trajectory whose id starts with `prefix`."""
        rows = (
            self._conn()
            .execute("SELECT id FROM trajectories WHERE id >= ? AND id < ? LIMIT 2", (prefix, prefix + "\U0010ffff"))
            .fetchall()
        )
        if not rows:
            raise StoreError(f"no trajectory id starts with {prefix!r} in {self.path}")
        if len(rows) > 1:
            raise StoreError(f"id prefix {prefix!r} is ambiguous in {self.path}; give more characters")
        full_id: str = rows[0][0]
        return full_id

    def iter_trajectories(self, **filters: Any) -> Iterator[Trajectory]:
        """Yield full trajectories matching the `query` filters, oldest first (streamed)."""
        clause, params = self._where(filters)
        cursor = self._conn().execute(f"SELECT {BLOB_COLUMNS} FROM trajectories {clause}", params)
        for row in cursor:
            yield from_row(row)

    def query(
        self,
        run: str | None = None,
        role: str | None = None,
        min_reward: float | None = None,
        max_reward: float | None = None,
        termination: str | list[str] | None = None,
        hops: int | list[int] | None = None,
        policy: str | None = None,
        limit: int | None = None,
        **filters: Any,
    ) -> pd.DataFrame:
        """Summary rows (no blobs) as a DataFrame; `rewards` is a dict column.

        Extra filters: `task_id`, `origin` (trajectories whose origin is that id), `ids`, the stages
        its lineage names (`phase`, `iteration`, `train_step`; see `_stages.py`), and
        `search`: full text over question, think, code, output, answer, id and policy, every word
        in any order as a word prefix (`search="capital teiv"`; see `_search.py`). Lists match any.
        """
        import pandas as pd

        filters.update(
            run=run,
            role=role,
            min_reward=min_reward,
            max_reward=max_reward,
            termination=termination,
            hops=hops,
            policy=policy,
            limit=limit,
        )
        clause, params = self._where(filters)
        cursor = self._conn().execute(
            f"SELECT {select(SUMMARY_COLUMNS, self._legacy())} FROM trajectories {clause}", params
        )
        df = pd.DataFrame(cursor.fetchall(), columns=list(SUMMARY_COLUMNS))
        df["rewards"] = [json.loads(r) for r in df["rewards"]]
        df["hops"] = df["hops"].astype("Int64")
        df["reward"] = df["reward"].astype("float64")
        return df

    def columns(self, names: Sequence[str], **filters: Any) -> dict[str, list[Any]]:
        """Summary columns as plain lists, in `query`'s row order and with its filters: no pandas
        and no JSON decoded (`rewards` stays JSON text), the cheap read behind a list view.
        `names` come from `query`'s columns plus `written_at` and the stage columns (`phase`,
        `iteration`, `train_step`: `_stages.py`)."""
        allowed = (*SUMMARY_COLUMNS, *_stages.STAGE_COLUMNS, "written_at")
        unknown = [n for n in names if n not in allowed]
        if unknown or not names:
            raise ConfigError(f"unknown summary column(s) {unknown}; choose from {list(allowed)}")
        clause, params = self._where(filters)
        stage_sql = self._stage_sql() if set(names) & set(_stages.STAGE_COLUMNS) else {}
        reads = {**self._legacy(), **stage_sql}
        rows = self._conn().execute(f"SELECT {select(names, reads)} FROM trajectories {clause}", params).fetchall()
        values = list(zip(*rows, strict=True)) if rows else [()] * len(names)
        return {name: list(column) for name, column in zip(names, values, strict=True)}

    def metadata(self, **filters: Any) -> dict[str, dict[str, Any]]:
        """Each matching trajectory's `metadata` dict by id, read without parsing its steps."""
        clause, params = self._where(filters)
        cursor = self._conn().execute(f"SELECT id, codec, data FROM trajectories {clause}", params)
        return {traj_id: decode_metadata(codec, blob) for traj_id, codec, blob in cursor}

    def _where(self, filters: dict[str, Any]) -> tuple[str, list[Any]]:
        """`where(filters)`, after making sure this thread's connection can search: a store opened
        read-only that predates the index gets one in its connection's `temp` schema (built from
        the trajectories stored when it is first searched)."""
        if filters.get("search"):
            conn = self._conn()
            if not _search.has_index(conn) and not _search.has_index(conn, "temp"):
                _schema.build_index(conn, "temp")
        staged = any(filters.get(name) is not None for name in _stages.STAGE_COLUMNS)
        return where(filters, self._stage_sql() if staged else None)

    def _legacy(self) -> dict[str, str]:
        """How a read-only store written before v4 reads its renamed columns (`_schema.legacy_reads`)."""
        return _schema.legacy_reads(self._conn()) if self.readonly else {}

    def _stage_sql(self) -> dict[str, str]:
        """How this thread's connection reads the stage columns (`_stages.expressions`); kept once
        the store has them as columns (a store never loses them)."""
        known: dict[str, str] | None = getattr(self._local, "stage_sql", None)
        if known is not None:
            return known
        sql = _stages.expressions(self._conn())
        if sql == {name: name for name in _stages.STAGE_COLUMNS}:
            self._local.stage_sql = sql
        return sql

    # -- lineage ---------------------------------------------------------------------------
    def children(self, traj_id: str) -> list[Trajectory]:
        """Trajectories whose lineage names `traj_id` as origin or parent (e.g. a proposer's
        question → its solver attempts)."""
        rows = (
            self._conn()
            .execute(
                f"SELECT {BLOB_COLUMNS} FROM trajectories WHERE origin_id = ? OR parent_id = ? "
                "ORDER BY started_at, rowid",
                (traj_id, traj_id),
            )
            .fetchall()
        )
        return [from_row(r) for r in rows]

    def origin(self, traj_id: str) -> Trajectory | None:
        """The trajectory `traj_id` came from (`lineage["origin"]`, else `"parent"`), if stored."""
        row = (
            self._conn()
            .execute("SELECT COALESCE(origin_id, parent_id) FROM trajectories WHERE id = ?", (traj_id,))
            .fetchone()
        )
        if row is None:
            raise StoreError(f"no trajectory {traj_id!r} in {self.path}")
        return self.get(row[0]) if row[0] and row[0] in self else None

    # -- rewards ---------------------------------------------------------------------------
    def record_rewards(
        self,
        traj_id: str,
        rewards: dict[str, float],
        spec_name: str,
        spec_json: str | dict[str, Any] | None = None,
        provenance: dict[str, Any] | None = None,
    ) -> None:
        """Make `rewards` the trajectory's current rewards and append them to its history.

        `provenance` is e.g. {"author": "alice", "reason": "f1 instead of EM"}; other keys kept. The
        same rewards under the same spec as the last entry, with no author or reason, complete that
        entry (its spec JSON, the other keys) instead of repeating it."""
        prov = safe_json(dict(provenance or {}))
        traj_id, spec_name = _safe(traj_id), _safe(spec_name)
        if not isinstance(spec_json, (str, type(None))):
            spec_json = json.dumps(safe_json(spec_json), sort_keys=True, default=str)
        spec_json = _safe(spec_json)
        rewards_json = json.dumps({safe_text(str(k)): float(v) for k, v in rewards.items()})
        total = rewards.get("total")
        author, reason = prov.pop("author", None), prov.pop("reason", None)
        with self._transaction() as conn:
            cur = conn.execute(
                "UPDATE trajectories SET reward = ?, rewards_json = ?, reward_spec = ? WHERE id = ?",
                (total, rewards_json, spec_name, traj_id),
            )
            if cur.rowcount == 0:
                raise StoreError(f"no trajectory {traj_id!r} in {self.path}; write it before recording rewards")
            last = conn.execute(
                "SELECT seq, spec_name, rewards_json FROM rewards_history WHERE trajectory_id = ? "
                "ORDER BY seq DESC LIMIT 1",
                (traj_id,),
            ).fetchone()
            if last is not None and last[1:] == (spec_name, rewards_json) and author is None and reason is None:
                # the same assignment again, with nothing to say who or why: completes the last row
                conn.execute(
                    "UPDATE rewards_history SET spec_json = COALESCE(?, spec_json), provenance_json = ? WHERE seq = ?",
                    (spec_json, json.dumps(prov, default=str), last[0]),
                )
                return
            conn.execute(
                HISTORY_INSERT,
                (
                    traj_id,
                    spec_name,
                    spec_json,
                    rewards_json,
                    total,
                    time.time(),
                    author,
                    reason,
                    json.dumps(prov, default=str),
                ),
            )

    def reward_history(self, traj_id: str) -> pd.DataFrame:
        """Every reward assignment of a trajectory, oldest first."""
        import pandas as pd

        rows = [list(r.values()) for r in self.reward_records(traj_id)]
        return pd.DataFrame(rows, columns=list(_HISTORY_COLUMNS))

    def reward_records(self, traj_id: str) -> list[dict[str, Any]]:
        """`reward_history` as plain dicts (no pandas)."""
        rows = (
            self._conn()
            .execute(
                "SELECT trajectory_id, spec_name, spec_json, rewards_json, total, created_at, author, "
                "reason, provenance_json FROM rewards_history WHERE trajectory_id = ? ORDER BY seq",
                (traj_id,),
            )
            .fetchall()
        )
        records = [dict(zip(_HISTORY_COLUMNS, row, strict=True)) for row in rows]
        for r in records:
            r["rewards"], r["provenance"] = json.loads(r["rewards"]), json.loads(r["provenance"])
        return records

    # -- metrics and events ----------------------------------------------------------------
    def log_metrics(self, run_id: str, step: int, values: dict[str, float], time_s: float | None = None) -> None:
        """Append one training step's metrics (one transaction)."""
        now = time.time() if time_s is None else time_s
        run_id = _safe(run_id)
        rows = [(run_id, int(step), safe_text(str(k)), None if v is None else float(v), now) for k, v in values.items()]
        with self._transaction() as conn:
            conn.executemany("INSERT INTO metrics VALUES (?, ?, ?, ?, ?)", rows)

    def metrics(self, run_id: str | None = None, name: str | None = None) -> pd.DataFrame:
        """Long-format metrics (run_id, step, name, value, time); pivot with
        `df.pivot_table(index="step", columns="name", values="value")`."""
        import pandas as pd

        clause, params = _simple_where(run_id=run_id, name=name)
        rows = (
            self._conn()
            .execute(
                f"SELECT run_id, step, name, value, time FROM metrics {clause} ORDER BY run_id, step, rowid", params
            )
            .fetchall()
        )
        return pd.DataFrame(rows, columns=["run_id", "step", "name", "value", "time"])

    def log_event(
        self, run_id: str, kind: str, payload: dict[str, Any] | None = None, trajectory_id: str | None = None
    ) -> None:
        """Append a run event (e.g. kind="iteration_start", payload={"iteration": 3})."""
        with self._transaction() as conn:
            conn.execute(
                "INSERT INTO events (run_id, kind, trajectory_id, payload_json, time) VALUES (?, ?, ?, ?, ?)",
                (
                    _safe(run_id),
                    _safe(kind),
                    _safe(trajectory_id),
                    json.dumps(safe_json(payload or {}), default=str),
                    time.time(),
                ),
            )

    def events(self, run_id: str | None = None, kind: str | None = None) -> pd.DataFrame:
        """The run's events, oldest first (run_id, kind, trajectory_id, payload, time)."""
        import pandas as pd

        return pd.DataFrame(self.event_records(run_id, kind), columns=list(_EVENT_COLUMNS))

    def event_records(self, run_id: str | None = None, kind: str | None = None) -> list[dict[str, Any]]:
        """`events` as plain dicts (no pandas), payloads decoded."""
        clause, params = _simple_where(run_id=run_id, kind=kind)
        rows = (
            self._conn()
            .execute(
                f"SELECT run_id, kind, trajectory_id, payload_json, time FROM events {clause} ORDER BY seq", params
            )
            .fetchall()
        )
        records = [dict(zip(_EVENT_COLUMNS, row, strict=True)) for row in rows]
        for r in records:
            r["payload"] = json.loads(r["payload"])
        return records

    # -- export ----------------------------------------------------------------------------
    def export_jsonl(self, path: str | os.PathLike[str], **filters: Any) -> int:
        """One `Trajectory.to_dict()` per line; read back with `Trajectory.from_dict`."""
        from workbench.store.export import export_jsonl

        return export_jsonl(self, path, **filters)

    def export_parquet(self, path: str | os.PathLike[str], **filters: Any) -> int:
        """Summary columns plus the full trajectory as a JSON string column `trajectory`."""
        from workbench.store.export import export_parquet

        return export_parquet(self, path, **filters)

    def to_dataset(self, **filters: Any) -> datasets.Dataset:
        """The same rows as `export_parquet`, as a Hugging Face `datasets.Dataset`."""
        from workbench.store.export import to_dataset

        return to_dataset(self, **filters)


_EVENT_COLUMNS = ("run_id", "kind", "trajectory_id", "payload", "time")
_HISTORY_COLUMNS = (
    "trajectory_id",
    "spec_name",
    "spec_json",
    "rewards",
    "total",
    "created_at",
    "author",
    "reason",
    "provenance",
)


def _safe(value: Any) -> Any:
    """Strings made valid Unicode (SQLite rejects lone surrogates); other values as they are."""
    return safe_text(value) if isinstance(value, str) else value


def _simple_where(**equals: Any) -> tuple[str, list[Any]]:
    used = {k: v for k, v in equals.items() if v is not None}
    if not used:
        return "", []
    return "WHERE " + " AND ".join(f"{k} = ?" for k in used), list(used.values())

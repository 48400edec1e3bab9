"""Export a store to JSONL, Parquet and Hugging Face `datasets` (streamed, a batch at a time).

store.export_jsonl("out.jsonl")            # Trajectory.from_dict(json.loads(line)) per line
store.export_parquet("out.parquet", role="solver")
ds = store.to_dataset(min_reward=1.0)      # columns: summary fields + `trajectory` (JSON)
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import datasets
    import pyarrow as pa

    from workbench.store.store import Store

BATCH = 500


def export_jsonl(store: Store, path: str | os.PathLike[str], **filters: Any) -> int:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    n = 0
    with path.open("w", encoding="utf-8") as f:
        for traj in store.iter_trajectories(**filters):
            f.write(json.dumps(traj.to_dict(), ensure_ascii=False) + "\n")
            n += 1
    return n


def _schema() -> pa.Schema:
    import pyarrow as pa

    return pa.schema(
        [
            ("id", pa.string()),
            ("run_id", pa.string()),
            ("role", pa.string()),
            ("task_id", pa.string()),
            ("question", pa.string()),
            ("golden_answers", pa.list_(pa.string())),
            ("hops", pa.int64()),
            ("termination", pa.string()),
            ("reward", pa.float64()),
            ("rewards", pa.string()),
            ("reward_spec", pa.string()),
            ("num_steps", pa.int64()),
            ("num_host_calls", pa.int64()),
            ("final_answer", pa.string()),
            ("policy", pa.string()),
            ("origin_id", pa.string()),
            ("started_at", pa.float64()),
            ("ended_at", pa.float64()),
            ("trajectory", pa.string()),
        ]
    )


def _batches(store: Store, filters: dict[str, Any]) -> Iterator[pa.RecordBatch]:
    import pyarrow as pa

    from workbench.store._rows import policy_name

    schema = _schema()
    rows: list[dict[str, Any]] = []
    for traj in store.iter_trajectories(**filters):
        rows.append(
            {
                "id": traj.id,
                "run_id": traj.run_id,
                "role": traj.role,
                "task_id": traj.task.id,
                "question": traj.task.question,
                "golden_answers": traj.task.golden_answers,
                "hops": traj.hops,
                "termination": traj.termination,
                "reward": traj.reward,
                "rewards": json.dumps(traj.rewards),
                "reward_spec": traj.reward_spec,
                "num_steps": len(traj.steps),
                "num_host_calls": traj.num_host_calls,
                "final_answer": traj.final_answer,
                "policy": policy_name(traj.lineage.get("policy")),
                "origin_id": traj.lineage.get("origin"),
                "started_at": traj.started_at,
                "ended_at": traj.ended_at,
                "trajectory": json.dumps(traj.to_dict(), ensure_ascii=False),
            }
        )
        if len(rows) >= BATCH:
            yield pa.RecordBatch.from_pylist(rows, schema=schema)
            rows = []
    if rows:
        yield pa.RecordBatch.from_pylist(rows, schema=schema)


def export_parquet(store: Store, path: str | os.PathLike[str], **filters: Any) -> int:
    import pyarrow.parquet as pq

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    n = 0
    with pq.ParquetWriter(path, _schema(), compression="zstd") as writer:
        for batch in _batches(store, filters):
            writer.write_batch(batch)
            n += batch.num_rows
    return n


def to_dataset(store: Store, **filters: Any) -> datasets.Dataset:
    import datasets
    import pyarrow as pa

    schema = _schema()
    table = pa.Table.from_batches(list(_batches(store, filters)), schema=schema)
    return datasets.Dataset.from_dict(table.to_pydict(), features=datasets.Features.from_arrow_schema(schema))

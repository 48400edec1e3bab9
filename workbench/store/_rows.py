"""How a `Trajectory` maps to a row of the `trajectories` table, and back.

The row holds summary columns for queries and the full `Trajectory.to_dict()` as zlib-compressed
JSON (`codec` names the encoding so a later version can change it). The `rewards_json` and
`reward_spec` columns are authoritative: `from_row` overlays them on the decoded blob.
"""

from __future__ import annotations

import json
import time
import zlib
from typing import Any

from workbench.errors import StoreError
from workbench.trajectory import Trajectory

ZLIB_LEVEL = 6  # bench/bench_store.py: 2.7x smaller than JSON (token ids and logprobs are
# high-entropy; text compresses more) for 0.25 ms per trajectory, a quarter of to_dict() itself


def encode(traj: Trajectory) -> bytes:
    return zlib.compress(json.dumps(traj.to_dict(), separators=(",", ":")).encode(), ZLIB_LEVEL)


def decode(codec: str, blob: bytes) -> dict[str, Any]:
    if codec == "zlib-json":
        return json.loads(zlib.decompress(blob))
    if codec == "json":
        return json.loads(blob)
    raise StoreError(f"unknown trajectory codec {codec!r}; upgrade workbench to read this store")


# -- row mapping ------------------------------------------------------------------------------
_COLUMNS = ("id", "run_id", "role", "task_id", "question", "hops", "termination", "reward",
            "rewards_json", "reward_spec", "num_steps", "num_tool_calls", "final_answer", "error",
            "policy", "origin_id", "parent_id", "started_at", "ended_at", "written_at",
            "schema_version", "codec", "data")
UPSERT = (f"INSERT INTO trajectories ({', '.join(_COLUMNS)}) VALUES "
          f"({', '.join(':' + c for c in _COLUMNS)}) ON CONFLICT(id) DO UPDATE SET "
          + ", ".join(f"{c} = excluded.{c}" for c in _COLUMNS if c != "id"))
HISTORY_INSERT = ("INSERT INTO rewards_history (trajectory_id, spec_name, spec_json, rewards_json, "
                  "total, created_at, author, reason, provenance_json) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)")
BLOB_COLUMNS = "codec, data, rewards_json, reward_spec"


def policy_name(policy: Any) -> str | None:
    if policy is None or isinstance(policy, str):
        return policy
    if isinstance(policy, dict):
        for key in ("name", "model", "backend"):
            if policy.get(key):
                return str(policy[key])
    return str(policy)


def to_row(traj: Trajectory) -> dict[str, Any]:
    if not isinstance(traj, Trajectory):
        raise StoreError(f"Store.write takes a Trajectory, not {type(traj).__name__}; build one "
                         "with Trajectory.from_dict(...) if you have a dict")
    lineage = traj.lineage or {}
    return {
        "id": traj.id, "run_id": traj.run_id, "role": traj.role, "task_id": traj.task.id,
        "question": traj.task.question, "hops": traj.hops, "termination": traj.termination,
        "reward": traj.reward, "rewards_json": json.dumps(traj.rewards), "reward_spec": traj.reward_spec,
        "num_steps": len(traj.steps), "num_tool_calls": traj.num_tool_calls,
        "final_answer": traj.final_answer, "error": traj.error,
        "policy": policy_name(lineage.get("policy")), "origin_id": lineage.get("origin"),
        "parent_id": lineage.get("parent"), "started_at": traj.started_at, "ended_at": traj.ended_at,
        "written_at": time.time(), "schema_version": traj.schema_version, "codec": "zlib-json",
        "data": encode(traj),
    }


def from_row(row: tuple[Any, ...]) -> Trajectory:
    codec, blob, rewards_json, reward_spec = row
    data = decode(codec, blob)
    data["rewards"] = json.loads(rewards_json)  # the columns are authoritative (record_rewards)
    data["reward_spec"] = reward_spec
    return Trajectory.from_dict(data)

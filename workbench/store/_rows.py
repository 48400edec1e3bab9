"""How a `Trajectory` maps to a row of the `trajectories` table, and back.

The row holds summary columns for queries and the full `Trajectory.to_dict()` as zlib-compressed
JSON (`codec` names the encoding so a later version can change it). The `rewards_json` and
`reward_spec` columns are authoritative: `from_row` overlays them on the decoded blob.

Text that is not valid Unicode (lone surrogates, from kernel output, tool calls or a forged final
answer) cannot go into SQLite as it is: such a trajectory is stored with U+FFFD in their place
(`workbench.safetext`) and `metadata["sanitized"] = True`. `safe_trajectory` gives that copy.
"""

from __future__ import annotations

import json
import re
import time
import zlib
from typing import Any

from workbench.errors import StoreError
from workbench.safetext import safe_json, safe_text
from workbench.store._search import document
from workbench.trajectory import Trajectory

ZLIB_LEVEL = 6  # bench/bench_store.py: 2.7x smaller than JSON (token ids and logprobs are
# high-entropy; text compresses more) for 0.25 ms per trajectory, a quarter of to_dict() itself


def encode(traj: Trajectory) -> bytes:
    return _compress(safe_trajectory(traj).to_dict(), traj.id)


def _compress(data: dict[str, Any], traj_id: str) -> bytes:
    try:
        text = json.dumps(data, separators=(",", ":"))
    except (TypeError, ValueError) as exc:
        raise StoreError(
            f"trajectory {traj_id} holds a value JSON cannot represent ({exc}); keep "
            "metadata, lineage and tool results to str, numbers, bools, None, lists "
            "and dicts"
        ) from exc
    return zlib.compress(text.encode(), ZLIB_LEVEL)


def _sanitized(traj: Trajectory) -> tuple[Trajectory, dict[str, Any]]:
    """(the trajectory to store, its dict): a flagged safe copy when any text needed it."""
    data = traj.to_dict()
    clean = safe_json(data)
    if clean is data:
        return traj, data
    clean["metadata"] = {**(clean.get("metadata") or {}), "sanitized": True}
    return Trajectory.from_dict(clean), clean


def safe_trajectory(traj: Trajectory) -> Trajectory:
    """`traj` itself when all its text is valid Unicode, else a copy with each lone surrogate
    replaced by U+FFFD and `metadata["sanitized"] = True` (what `Store.write` stores)."""
    return _sanitized(traj)[0]


def decode(codec: str, blob: bytes) -> dict[str, Any]:
    if codec == "zlib-json":
        data: dict[str, Any] = json.loads(zlib.decompress(blob))
    elif codec == "json":
        data = json.loads(blob)
    else:
        raise StoreError(f"unknown trajectory codec {codec!r}; upgrade workbench to read this store")
    return data


_METADATA_KEY = '"metadata":'
_DECODER = json.JSONDecoder()
_SPACE = re.compile(r"\s*")


def decode_metadata(codec: str, blob: bytes) -> dict[str, Any]:
    """The trajectory's top-level `metadata` without parsing its steps. In `to_dict()` order only
    scalar fields follow it, so it is parsed from its last key on; what follows must then close
    exactly the top-level object, else the blob is decoded whole."""
    if codec not in ("zlib-json", "json"):
        return decode(codec, blob).get("metadata") or {}
    text = (zlib.decompress(blob) if codec == "zlib-json" else bytes(blob)).decode()
    at = text.rfind(_METADATA_KEY)
    if at >= 0:
        try:
            space = _SPACE.match(text, at + len(_METADATA_KEY))
            assert space is not None  # `\s*` matches anywhere
            value, end = _DECODER.raw_decode(text, space.end())
            rest = text[end:].lstrip()
            tail = json.loads("{" + (rest[1:] if rest.startswith(",") else rest))
            if isinstance(value, dict) and isinstance(tail, dict):
                return value
        except ValueError:
            pass
    whole: dict[str, Any] = json.loads(text)
    return whole.get("metadata") or {}


# -- row mapping ------------------------------------------------------------------------------
_COLUMNS = (
    "id",
    "run_id",
    "role",
    "task_id",
    "question",
    "hops",
    "termination",
    "reward",
    "rewards_json",
    "reward_spec",
    "num_steps",
    "num_host_calls",
    "final_answer",
    "error",
    "policy",
    "origin_id",
    "parent_id",
    "phase",
    "iteration",
    "train_step",
    "started_at",
    "ended_at",
    "written_at",
    "schema_version",
    "codec",
    "data",
)
UPSERT = (
    f"INSERT INTO trajectories ({', '.join(_COLUMNS)}) VALUES "
    f"({', '.join(':' + c for c in _COLUMNS)}) ON CONFLICT(id) DO UPDATE SET "
    + ", ".join(f"{c} = excluded.{c}" for c in _COLUMNS if c != "id")
    + " RETURNING rowid"
)
HISTORY_INSERT = (
    "INSERT INTO rewards_history (trajectory_id, spec_name, spec_json, rewards_json, "
    "total, created_at, author, reason, provenance_json) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
BLOB_COLUMNS = "codec, data, rewards_json, reward_spec"


def policy_name(policy: object) -> str | None:
    if policy is None or isinstance(policy, str):
        return None if policy is None else safe_text(policy)
    if isinstance(policy, dict):
        for key in ("name", "model", "backend"):
            if policy.get(key):
                return safe_text(str(policy[key]))
    return safe_text(str(policy))


def _number(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def stage(lineage: dict[str, Any]) -> dict[str, Any]:
    """The stage columns (`_stages.py`) of a trajectory with this lineage (None where it names none)."""
    phase = lineage.get("phase")
    return {
        "phase": safe_text(phase) if isinstance(phase, str) and phase else None,
        "iteration": _number(lineage.get("iteration")),
        "train_step": _number(lineage.get("train_step")),
    }


def to_row(traj: Trajectory) -> dict[str, Any]:
    if not isinstance(traj, Trajectory):
        raise StoreError(
            f"Store.write takes a Trajectory, not {type(traj).__name__}; build one "
            "with Trajectory.from_dict(...) if you have a dict"
        )
    traj, data = _sanitized(traj)
    lineage = traj.lineage or {}
    return {
        "id": traj.id,
        "run_id": traj.run_id,
        "role": traj.role,
        "task_id": traj.task.id,
        "question": traj.task.question,
        "hops": traj.hops,
        "termination": traj.termination,
        "reward": traj.reward,
        "rewards_json": json.dumps(traj.rewards),
        "reward_spec": traj.reward_spec,
        "num_steps": len(traj.steps),
        "num_host_calls": traj.num_host_calls,
        "final_answer": traj.final_answer,
        "error": traj.error,
        "policy": policy_name(lineage.get("policy")),
        "origin_id": lineage.get("origin"),
        "parent_id": lineage.get("parent"),
        **stage(lineage),
        "started_at": traj.started_at,
        "ended_at": traj.ended_at,
        "written_at": time.time(),
        "schema_version": traj.schema_version,
        "codec": "zlib-json",
        "data": _compress(data, traj.id),
        "document": document(data),  # its full-text index row (not a column; _search.py)
    }


def from_row(row: tuple[Any, ...]) -> Trajectory:
    codec, blob, rewards_json, reward_spec = row
    data = decode(codec, blob)
    data["rewards"] = json.loads(rewards_json)  # the columns are authoritative (record_rewards)
    data["reward_spec"] = reward_spec
    return Trajectory.from_dict(data)

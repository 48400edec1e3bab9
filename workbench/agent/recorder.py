"""`Recorder`: the one owner of scoring and writing an ended episode.

    recorder = Recorder(store)
    recorder.record(traj, reward_spec)                 # sanitise, score, write: once per trajectory
    recorder.record(traj, spec, rewards=scored, provenance={"iteration": 2})   # rewards set elsewhere

Executors return trajectories unscored and unwritten; whoever drives them (the agent, evaluation,
the trainer, self-evolution, the demo) hands each one to a `Recorder` exactly once. Nothing here
raises for one episode's trouble: a reward bug or a store failure is recorded on the trajectory
(`metadata["reward_error"]`, `["store_error"]`) and the batch goes on. Writing the same trajectory
id twice through one recorder is a bug and raises `StoreError`.

The store is any `TrajectoryStore` (`write` and `record_rewards`; `workbench.store.Store` is one),
a reward spec any `Scorer` (`score(traj)`; `RewardSpec` and `resolve_reward(...)`'s results are);
both protocols live in `workbench.contracts` and are importable from here too.
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from collections.abc import Mapping
from typing import Any

from workbench.contracts import Scorer, TrajectoryStore
from workbench.errors import ConfigError, StoreError
from workbench.safetext import safe_text
from workbench.trajectory import Task, Trajectory

log = logging.getLogger(__name__)


class Recorder:
    """Scores and writes trajectories to `store` (None: scores only), each id once."""

    def __init__(self, store: TrajectoryStore | None = None) -> None:
        if store is not None and not isinstance(store, TrajectoryStore):
            raise ConfigError(
                f"Recorder: {type(store).__name__} is not a trajectory store; pass a "
                "workbench.store.Store (or an object with write(traj) and "
                "record_rewards(traj_id, rewards, spec_name, spec_json, provenance=...)), "
                "or None to score only"
            )
        self.store = store
        self.written: set[str] = set()

    def record(
        self,
        traj: Trajectory,
        reward_spec: Scorer | None = None,
        *,
        rewards: Mapping[str, float] | None = None,
        provenance: Mapping[str, Any] | None = None,
    ) -> Trajectory:
        """Sanitise `traj`, score it with `reward_spec` (or take `rewards` as scored by `reward_spec`)
        and write it. With `provenance`, the rewards also go to the store's reward history with the
        spec's JSON and that provenance. Returns the trajectory as recorded."""
        traj = sanitized(traj)
        if rewards is not None:
            traj.rewards = {str(k): float(v) for k, v in rewards.items()}
            traj.reward_spec = spec_name(reward_spec)
        elif reward_spec is not None:
            score(traj, reward_spec)
        if self.store is None:
            return traj
        if traj.id in self.written:
            raise StoreError(
                f"trajectory {traj.id} was already recorded; record each trajectory once "
                "(rescore a stored one with store.record_rewards)"
            )
        self.written.add(traj.id)
        if store_trajectory(self.store, traj) and provenance is not None and traj.rewards:
            to_json = getattr(reward_spec, "to_json", None)
            spec_json = to_json() if callable(to_json) else None
            try:
                self.store.record_rewards(
                    traj.id, traj.rewards, traj.reward_spec or "", spec_json, provenance=dict(provenance)
                )
            except Exception as exc:
                note(traj, "store_error", f"reward history: {describe(exc)}")
        return traj


def sanitized(traj: Trajectory) -> Trajectory:
    """`traj` with text that is not valid Unicode replaced (`safe_trajectory`); never raises."""
    from workbench.store import safe_trajectory

    try:
        return safe_trajectory(traj)
    except Exception as exc:  # a value to_dict() cannot copy: left as it is, the store says why
        note(traj, "sanitize_error", describe(exc))
        return traj


def score(traj: Trajectory, reward_spec: Scorer) -> None:
    """`traj.rewards` from `reward_spec.score(traj)`; a failure is noted, never raised."""
    try:
        traj.rewards = reward_spec.score(traj)
        traj.reward_spec = spec_name(reward_spec)
    except Exception as exc:  # a reward bug must not lose the trajectory
        note(traj, "reward_error", describe(exc))


def spec_name(reward_spec: Scorer | None) -> str | None:
    return None if reward_spec is None else str(getattr(reward_spec, "name", type(reward_spec).__name__))


def describe(exc: BaseException) -> str:
    """`Type: message`, even for an exception whose `__str__` fails."""
    try:
        return f"{type(exc).__name__}: {exc}"
    except Exception:
        return f"{type(exc).__name__}: (its message could not be rendered)"


def note(traj: Trajectory, key: str, value: Any) -> None:
    """Record a failure in `traj.metadata` (replacing metadata that is not a dict)."""
    if not isinstance(traj.metadata, dict):
        traj.metadata = {"metadata_repr": safe_text(repr(traj.metadata))}
    traj.metadata[key] = value


def store_trajectory(store: TrajectoryStore, traj: Trajectory) -> bool:
    """Write `traj`; never raises. True when it was stored as it is.

    When the write fails, the episode is recorded as an error with the reason (in `traj`), and
    the store gets a copy whose values JSON cannot hold are written as their repr, else a minimal
    one (task, ids, termination, final answer, error), so the batch never loses the episode."""
    try:
        store.write(traj)
        return True
    except Exception as exc:
        reason = describe(exc)
    log.warning("trajectory %s could not be stored as it is (%s); storing a reduced copy", traj.id, reason)
    note(traj, "store_error", reason)
    if traj.termination != "error":
        note(traj, "termination_before_store_error", traj.termination)
    traj.termination = "error"
    traj.error = f"{traj.error}\n" if traj.error else ""
    traj.error += f"the store could not write this trajectory as it is: {reason}"
    for reduce in (_repr_copy, _minimal_copy):
        try:
            store.write(reduce(traj))
            return False
        except Exception as exc:
            note(traj, "store_error", f"{reason}; reduced copy: {describe(exc)}")
    log.error("trajectory %s could not be stored at all: %s", traj.id, traj.metadata["store_error"])
    return False


def _repr_copy(traj: Trajectory) -> Trajectory:
    """`traj` with every value JSON cannot hold replaced by its repr."""
    return Trajectory.from_dict(json.loads(json.dumps(traj.to_dict(), default=repr)))


def _minimal_copy(traj: Trajectory) -> Trajectory:
    """Only plain fields, each forced to text: what is left when the full trajectory will not go."""

    def text(value: Any) -> str | None:
        return None if value is None else safe_text(value if isinstance(value, str) else repr(value))

    task = Task(id=text(traj.task.id) or "", question=text(traj.task.question) or "")
    return Trajectory(
        task=task,
        id=text(traj.id) or uuid.uuid4().hex,
        run_id=text(traj.run_id) or "",
        role=text(traj.role) or "",
        final_answer=text(traj.final_answer),
        termination="error",
        error=text(traj.error),
        metadata={
            "minimal": True,
            "store_error": text(traj.metadata.get("store_error")) if isinstance(traj.metadata, dict) else None,
        },
        started_at=_number(traj.started_at),
        ended_at=_number(traj.ended_at),
    )


def _number(value: Any) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return time.time()


__all__ = [
    "Recorder",
    "Scorer",
    "TrajectoryStore",
    "describe",
    "note",
    "sanitized",
    "score",
    "spec_name",
    "store_trajectory",
]

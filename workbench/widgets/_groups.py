"""A training step's groups: each prompt's rollouts with their rewards, spread and advantages as
trained, and the groups dynamic sampling dropped (read from the trainer's step records,
`workbench.train.step_records`, and the trajectories' `lineage["train_step"]`).

    step_groups(store, step=2)                    # one row per group (GROUP_COLUMNS)
    group_of(store, traj)                         # the group one trajectory was trained in

A run written before the trainer recorded advantages still gets its groups (from the lineage) with
`advantages` None and a note saying so. Steps restart in each evolve iteration, so each group
names its iteration (the last `iteration_start` event before it).
"""

from __future__ import annotations

import statistics
from typing import TYPE_CHECKING, Any

from workbench.trajectory import Trajectory

if TYPE_CHECKING:
    import pandas as pd

    from workbench.store import Store

GROUP_COLUMNS = (
    "iteration",
    "step",
    "task_id",
    "question",
    "rollouts",
    "rewards",
    "mean",
    "spread",
    "advantages",
    "kept",
    "dropped",
    "trajectory_ids",
    "answers",
    "note",
)
NOT_RECORDED = "advantages not recorded: the run predates the trainer's step records"


def iteration_at(starts: list[tuple[float, Any]], when: float) -> Any:
    """The iteration running at time `when` (None when the run has no iteration events)."""
    current = None
    for at, iteration in starts:
        if at <= when:
            current = iteration
    return current


def _group(step: int, iteration: Any, members: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    rewards = [m["reward"] for m in members]
    scored = [float(r) for r in rewards if r is not None]
    return {
        "iteration": iteration,
        "step": step,
        "task_id": members[0]["task_id"],
        "question": members[0]["question"],
        "rollouts": len(members),
        "rewards": rewards,
        "mean": statistics.fmean(scored) if scored else None,
        "spread": statistics.pstdev(scored) if scored else None,
        "trajectory_ids": [m["id"] for m in members],
        "answers": [m["answer"] for m in members],
        **{"advantages": None, "kept": None, "dropped": False, "note": "", **extra},
    }


def _by_task(members: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    groups: dict[str, list[dict[str, Any]]] = {}
    for m in members:
        groups.setdefault(m["task_id"], []).append(m)
    return list(groups.values())


def _recorded(store: Store, payload: dict[str, Any], iteration: Any) -> list[dict[str, Any]]:
    """The groups of one `advantages` record, members in batch order."""
    ids = payload["trajectories"]
    cols = store.columns(("id", "task_id", "question", "reward", "final_answer"), ids=ids)
    cols["answer"] = cols.pop("final_answer")
    stored = {traj_id: {name: cols[name][k] for name in cols} for k, traj_id in enumerate(cols["id"])}
    at = {traj_id: k for k, traj_id in enumerate(ids)}
    note = "values before whitening over the batch's tokens" if payload.get("token_whiten") else ""
    kept = payload.get("kept")
    out = []
    for members in _by_task([stored[i] for i in ids if i in stored]):
        pos = [at[m["id"]] for m in members]
        out.append(
            _group(
                payload["step"],
                iteration,
                members,
                advantages=[payload["advantages"][p] for p in pos],
                kept=None if kept is None else [kept[p] for p in pos],
                note=note,
            )
        )
    return out


def _dropped(payload: dict[str, Any], iteration: Any) -> list[dict[str, Any]]:
    out = []
    for g in payload.get("groups", []):
        members = [
            {"id": i, "task_id": g["task_id"], "question": g["question"], "reward": r, "answer": a}
            for i, r, a in zip(g["trajectories"], g["rewards"], g["answers"], strict=True)
        ]
        if members:
            note = "dropped by dynamic sampling (all rewards equal); not in the store"
            out.append(_group(payload["step"], iteration, members, dropped=True, note=note))
    return out


def _from_lineage(trajs: list[Trajectory], step: int, starts: list[tuple[float, Any]]) -> list[dict[str, Any]]:
    """Groups rebuilt from the trajectories' `train_step` (no advantages: not recorded)."""
    members = [
        {
            "id": t.id,
            "task_id": t.task.id,
            "question": t.task.question,
            "reward": t.reward,
            "answer": t.final_answer,
            "iteration": iteration_at(starts, t.started_at),
        }
        for t in trajs
        if (t.lineage or {}).get("train_step") == step
    ]
    by_iteration: dict[Any, list[dict[str, Any]]] = {}
    for m in members:
        by_iteration.setdefault(m["iteration"], []).append(m)
    return [
        _group(step, iteration, group, note=NOT_RECORDED)
        for iteration, ms in by_iteration.items()
        for group in _by_task(ms)
    ]


def iteration_starts(store: Store, events: list[dict[str, Any]] | None = None) -> list[tuple[float, Any]]:
    """(time, iteration) of each `iteration_start` event, oldest first."""
    events = store.event_records(kind="iteration_start") if events is None else events
    return [(float(e["time"]), (e["payload"] or {}).get("iteration")) for e in events if e["kind"] == "iteration_start"]


def _records(store: Store, step: int) -> tuple[list[tuple[float, Any]], list[tuple[str, float, dict[str, Any]]]]:
    """(iteration starts, this step's `advantages` / `dropped_groups` records as (kind, time, payload))."""
    events = store.event_records()
    starts = iteration_starts(store, events)
    mine = [
        (str(e["kind"]), float(e["time"]), e["payload"])
        for e in events
        if e["kind"] in ("advantages", "dropped_groups") and (e["payload"] or {}).get("step") == step
    ]
    return starts, mine


def step_groups(store: Store, step: int, iteration: Any = None, trajs: list[Trajectory] | None = None) -> pd.DataFrame:
    """One row per group of training step `step` (of `iteration`, or of every iteration), trained
    groups first then dropped ones; `trajs`: where to look for a run without step records (default:
    every trajectory in the store)."""
    import pandas as pd

    return pd.DataFrame(_step_group_rows(store, step, iteration, trajs), columns=list(GROUP_COLUMNS))


def _step_group_rows(store: Store, step: int, iteration: Any, trajs: list[Trajectory] | None) -> list[dict[str, Any]]:
    """`step_groups` as plain dicts (no pandas: the viewer's detail uses them)."""
    starts, records = _records(store, step)
    groups: list[dict[str, Any]] = []
    for kind, when, payload in records:
        it = iteration_at(starts, when)
        groups += _recorded(store, payload, it) if kind == "advantages" else _dropped(payload, it)
    if not any(kind == "advantages" for kind, _, _ in records):
        groups += _from_lineage(list(store.iter_trajectories()) if trajs is None else trajs, step, starts)
    if iteration is not None:
        groups = [g for g in groups if g["iteration"] == iteration]
    groups.sort(key=lambda g: g["dropped"])
    return groups


ACROSS_COLUMNS = ("iteration", "step", "rollouts", "mean", "rewards", "answers", "trajectory_ids")


def across_steps(store: Store, task_id: str, trajs: list[Trajectory] | None = None) -> pd.DataFrame:
    """One prompt's rollouts at every training step that drew it, oldest first: watch its answers
    and rewards change as training goes (`trajs`: that task's trajectories, if already read)."""
    import pandas as pd

    return pd.DataFrame(_across_rows(store, task_id, trajs), columns=list(ACROSS_COLUMNS))


def _across_rows(store: Store, task_id: str, trajs: list[Trajectory] | None) -> list[dict[str, Any]]:
    """`across_steps` as plain dicts."""
    if trajs is None:
        trajs = list(store.iter_trajectories(task_id=task_id))
    starts = iteration_starts(store)
    steps: dict[tuple[Any, int], list[Trajectory]] = {}
    for t in sorted(trajs, key=lambda t: t.started_at):
        step = (t.lineage or {}).get("train_step")
        if step is not None:
            steps.setdefault((iteration_at(starts, t.started_at), int(step)), []).append(t)
    rows = []
    for (iteration, step), members in steps.items():
        rewards = [t.reward for t in members]
        scored = [float(r) for r in rewards if r is not None]
        values = (iteration, step, len(members), statistics.fmean(scored) if scored else None, rewards,
                  [t.final_answer for t in members], [t.id for t in members])  # fmt: skip
        rows.append(dict(zip(ACROSS_COLUMNS, values, strict=True)))
    return rows


def group_of(store: Store, traj: Trajectory) -> dict[str, Any] | None:
    """The group `traj` was trained in (a `step_groups` row as a dict) plus `dropped`: how many
    groups its step dropped; None for a trajectory no training step used."""
    step = (traj.lineage or {}).get("train_step")
    if step is None:
        return None
    same_task = [store.get(i) for i in store.columns(("id",), task_id=traj.task.id)["id"]]
    groups = _step_group_rows(store, int(step), None, same_task)
    mine = [g for g in groups if traj.id in g["trajectory_ids"] and not g["dropped"]]
    if not mine:
        return None
    dropped = sum(g["dropped"] for g in groups)
    return {
        **mine[0],
        "dropped_groups": dropped,
        "me": traj.id,
        "across_steps": _across_rows(store, traj.task.id, same_task),
    }

"""The attempts on a proposer's question, each with where it came from: the phase, iteration and
training step that ran it, the reward spec that scored it, and whether the proposer's difficulty
was computed from it.

    attempts(store, proposer_traj)   # {"items": [...], "difficulty_from": "..."}

An evolve run asks a question twice over: difficulty probes (the propose phase, scored against
the proposer's answer by exact match; `metadata["solver_correct"]` holds their verdicts, which the
difficulty reads) and, once the question is in the QA set, the solver's training rollouts
(`lineage["phase"] == "solver_update"`, scored by the solver's spec). Mixed without labels they
cannot be reconciled with the difficulty; labelled they can.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from workbench.trajectory import Trajectory
from workbench.widgets._groups import iteration_at, iteration_starts

if TYPE_CHECKING:
    from workbench.store import Store

TRAINING_PHASE = "solver_update"


def _item(child: Trajectory, starts: list[tuple[float, Any]]) -> dict[str, Any]:
    lineage = child.lineage or {}
    phase = str(lineage.get("phase") or "propose")
    iteration = lineage.get("iteration")
    return {
        "id": child.id,
        "reward": child.reward,
        "termination": child.termination,
        "answer": child.final_answer,
        "phase": phase,
        "iteration": iteration if iteration is not None else iteration_at(starts, child.started_at),
        "step": lineage.get("train_step"),
        "spec": child.reward_spec,
        "difficulty": phase != TRAINING_PHASE,
    }


def attempts(store: Store, traj: Trajectory) -> dict[str, Any]:
    """The trajectories whose origin is `traj`, labelled (module docstring), and a sentence on
    which of them the difficulty came from (empty when `traj` records no verdicts)."""
    children = store.children(traj.id)
    starts = iteration_starts(store) if children else []
    items = [_item(c, starts) for c in children]
    verdicts = (traj.metadata or {}).get("solver_correct")
    note = ""
    if isinstance(verdicts, list) and verdicts:
        probes = sum(i["difficulty"] for i in items)
        note = (
            f"difficulty from {len(verdicts)} probe{'s' if len(verdicts) != 1 else ''} "
            f"({sum(bool(v) for v in verdicts)} correct by exact match against the proposer's answer)"
        )
        if probes != len(verdicts):
            note += f"; {probes} probe{'s are' if probes != 1 else ' is'} stored here"
    return {"items": items, "difficulty_from": note}

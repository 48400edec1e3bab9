"""The attempts on a proposer's question, each with where it came from: the phase, iteration and
training step that ran it, the reward spec that scored it, and whether the proposer's difficulty
was computed from it.

    attempts(store, proposer_traj)   # {"items": [...], "difficulty_from": "..."}
    solved_of(proposer_traj)         # (k, n): k of the n attempts its difficulty read were right
    proposal_valid(proposer_traj)    # passed its mode's gate

An evolve run asks a question twice over: difficulty probes (the propose phase, scored against
the proposer's answer by exact match; `metadata["solver_correct"]` holds their verdicts, which the
difficulty reads) and, once the question is in the QA set, the solver's training rollouts
(`lineage["phase"] == "solver_update"`, scored by the solver's spec). Mixed without labels they
cannot be reconciled with the difficulty; labelled they can.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from workbench.trajectory import Trajectory
from workbench.widgets import _render
from workbench.widgets._groups import iteration_at, iteration_starts

if TYPE_CHECKING:
    import pandas as pd

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


def proposal_valid(traj: Trajectory) -> bool:
    """Whether a proposer's question passed its mode's gate: Dr. Zero's format score > 0 where the
    trajectory has one, else a question and an answer, the answer not given away in the question."""
    from workbench.rewards.text import normalize_answer

    fmt = traj.rewards.get("format")
    if fmt is not None:
        return fmt > 0
    question, answer = str(traj.metadata.get("question") or ""), str(traj.final_answer or "")
    norm = normalize_answer(answer)
    return bool(question.strip() and norm) and norm not in normalize_answer(question)


def solved_of(traj: Trajectory) -> tuple[int | None, int | None]:
    """(k, n): of the n attempts the proposer's difficulty was computed from, k were right (None, None
    when it records no verdicts)."""
    verdicts = traj.metadata.get("solver_correct")
    if not isinstance(verdicts, list) or not verdicts:
        return None, None
    return sum(bool(v) for v in verdicts), len(verdicts)


def solved_text(k: Any, n: Any) -> str:
    """ "k of n solved", or "not attempted" when the question has no verdicts."""
    import pandas as pd

    return "not attempted" if pd.isna(k) or pd.isna(n) else f"{int(k)} of {int(n)} solved"


def questions_html(rows: pd.DataFrame, title: str) -> str:
    """A list of questions with their answer, validity and k of n (the dashboard's cell and sample lists)."""
    items = "".join(
        f"<li>{_render.badge('valid' if r.valid else 'invalid', '#1a7f37' if r.valid else '#cf222e')}"
        f"{_render.esc(r.question)} → <b>{_render.esc(r.answer if r.answer is not None else '—')}</b> "
        f"<span class='wb-solved' style='color:#57606a'>({solved_text(r.k, r.n)}; "
        f"difficulty {_render.number(r.difficulty)})</span></li>"
        for r in rows.itertuples()
    )
    return f"<b>{_render.esc(title)}</b><ul class='wb-questions'>{items}</ul>"

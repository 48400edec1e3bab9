"""Held-out accuracy per stage and hop count with 95% intervals, and each change between stages.

stages_table([zero, after_sft, after_rl])     # one column per stage: accuracy [low, high]
change_rows([zero, after_sft, after_rl])       # per consecutive pair and hop: change [low, high]
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any

from workbench.demo.intervals import paired_change, wilson


@dataclass
class StageEval:
    """One stage's held-out evaluation: rows per hop, each question's EM, the turns' format."""

    name: str
    rows: list[dict[str, Any]]
    correct: dict[str, float]  # task id -> EM (1 right, 0 wrong)
    hops: dict[str, int]  # task id -> hop count
    format: dict[str, Any] = field(default_factory=dict)


def hop_groups(stage: StageEval) -> list[tuple[str, list[str]]]:
    """(hop label, task ids) per hop count, then ("all", every task id)."""
    by_hop: dict[int, list[str]] = {}
    for task_id, hops in sorted(stage.hops.items()):
        by_hop.setdefault(hops, []).append(task_id)
    return [(str(h), ids) for h, ids in sorted(by_hop.items())] + [("all", sorted(stage.hops))]


def stage_rows(stage: StageEval) -> list[dict[str, Any]]:
    """Per hop count and overall: questions, correct, accuracy and its 95% Wilson interval."""
    rows = []
    for label, ids in hop_groups(stage):
        right = round(sum(stage.correct[i] for i in ids))
        low, high = wilson(right, len(ids))
        rows.append(
            {
                "hops": label,
                "questions": len(ids),
                "correct": right,
                "accuracy": right / len(ids),
                "low": low,
                "high": high,
            }
        )
    return rows


def stages_table(stages: Sequence[StageEval]) -> str:
    """One line per hop count, one column per stage: accuracy [95% interval]."""
    columns = [{r["hops"]: r for r in stage_rows(s)} for s in stages]
    header = f"  {'hops':>5} {'questions':>9} " + " ".join(f"{s.name:>22}" for s in stages)
    lines = [header]
    for label, row in columns[0].items():
        cells = [_cell(col[label]) for col in columns]
        lines.append(f"  {label:>5} {row['questions']:>9} " + " ".join(f"{c:>22}" for c in cells))
    return "\n".join(lines)


def _cell(row: dict[str, Any]) -> str:
    return f"{row['accuracy']:.1%} [{row['low']:.0%}, {row['high']:.0%}]"


def change_rows(stages: Sequence[StageEval], *, seed: int = 0) -> list[dict[str, Any]]:
    """For each consecutive pair of stages and each hop count: the change in accuracy (points as a
    fraction) with its paired 95% bootstrap interval over the same questions."""
    rows = []
    for before, after in pairwise(stages):
        if set(before.correct) != set(after.correct):
            raise ValueError(f"{before.name} and {after.name} scored different questions; compare one held-out set")
        for label, ids in hop_groups(before):
            change, low, high = paired_change(
                [before.correct[i] for i in ids], [after.correct[i] for i in ids], seed=seed
            )
            rows.append(
                {"from": before.name, "to": after.name, "hops": label, "questions": len(ids)}
                | {"change": change, "low": low, "high": high, "excludes_zero": low > 0 or high < 0}
            )
    return rows


def change_lines(changes: Sequence[dict[str, Any]]) -> list[str]:
    """Plain-text lines: each change in points with its interval, marked where it excludes 0."""
    lines = []
    for r in changes:
        mark = "  (interval excludes 0)" if r["excludes_zero"] else ""
        lines.append(
            f"  {r['from']} → {r['to']}, hops {r['hops']:>3} ({r['questions']} q): "
            f"{r['change'] * 100:+.1f} points [{r['low'] * 100:+.1f}, {r['high'] * 100:+.1f}]{mark}"
        )
    return lines


__all__ = ["StageEval", "change_lines", "change_rows", "hop_groups", "stage_rows", "stages_table"]

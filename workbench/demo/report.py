"""What the demo prints and keeps in `summary.json`: accuracy per hop, per stage with 95% intervals and the change
between stages, self-evolution per iteration and hop (the questions' mix, difficulty, the solver's pass rate, and a
learned proposer's format and difficulty in its HRPO rollouts).

    hop_table(after, before)                      # make demo's table: accuracy per hop, and the change
    stages_table([zero, after_sft, after_rl])     # one column per stage: accuracy [low, high]
    change_rows([zero, after_sft, after_rl])      # per consecutive pair and hop: change [low, high]
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any

from workbench.evaluate.intervals import paired_change, wilson
from workbench.evaluate.turn_format import FormatShares


def hop_table(rows: Sequence[dict[str, Any]], before: Sequence[dict[str, Any]] | None = None) -> str:
    """Accuracy (EM) per hop count; with `before`, the change too."""
    prior = {r["hops"]: float(r["em"]) for r in before or []}
    lines = [f"  {'hops':>5} {'questions':>9} {'accuracy':>9}" + (f" {'before':>7} {'change':>7}" if before else "")]
    for r in rows:
        line = f"  {r['hops']:>5} {r['questions']:>9} {float(r['em']):>9.1%}"
        if before:
            b = prior.get(r["hops"], 0.0)
            line += f" {b:>7.1%} {(float(r['em']) - b) * 100:>+6.1f}"
        lines.append(line)
    return "\n".join(lines)


def evolution_lines(iterations: Sequence[dict[str, Any]]) -> list[str]:
    """Per iteration: the proposer's question mix and difficulty, and the solver's pass rate, by hop."""
    lines = []
    for it in iterations:
        hops = sorted({k.rsplit("hop", 1)[1] for k in it if "/hop" in k})
        lines.append(f"  iteration {it['iteration']}: {it['qa_size']} questions in the QA set")
        for h in hops:
            mix = it.get(f"evolve/question_mix/hop{h}", 0.0)
            diff = it.get(f"evolve/difficulty/hop{h}", 0.0)
            pass_rate = it.get(f"evolve/solver_pass_rate/hop{h}", 0.0)
            lines.append(f"    hop {h}: mix {mix:5.1%}  difficulty {diff:.2f}  solver pass rate {pass_rate:5.1%}")
    return lines


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


def format_lines(stage: StageEval) -> list[str]:
    """How well a stage's turns followed the format, and what they wrote instead."""
    return FormatShares.from_dict(stage.format).lines()


def proposer_lines(iterations: Sequence[dict[str, Any]]) -> list[str]:
    """Per iteration and hop: the proposer's format and difficulty in its HRPO rollouts (first step →
    last) and in QA generation, and the solver's pass rate on the QA-generation questions."""
    lines = []
    for it in iterations:
        rollouts = (it.get("proposer_update") or {}).get("rollouts") or []
        lines.append(f"  iteration {it['iteration']}: {it['qa_size']} questions in the QA set")
        hops = sorted(
            {k.rsplit("hop", 1)[1] for k in it if k.startswith("evolve/format/hop")}
            | {h for b in rollouts for h in b if h != "all"},
            key=int,
        )
        for h in hops:
            line = f"    hop {h}:"
            if rollouts:
                first, last = rollouts[0].get(h), rollouts[-1].get(h)
                show = lambda s, k: f"{s[k]:.2f}" if s else "  - "  # noqa: E731
                line += (
                    f" HRPO rollouts format {show(first, 'format')} → {show(last, 'format')}, "
                    f"difficulty {show(first, 'difficulty')} → {show(last, 'difficulty')} |"
                )
            line += (
                f" QA generation format {it.get(f'evolve/format/hop{h}', 0.0):.2f}, "
                f"difficulty {it.get(f'evolve/difficulty/hop{h}', 0.0):.2f}, "
                f"solver pass rate {it.get(f'evolve/solver_pass_rate/hop{h}', 0.0):5.1%}"
            )
            lines.append(line)
    return lines


def proposer_summary(iterations: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The per-hop figures `proposer_lines` prints, as rows for summary.json."""
    rows = []
    for it in iterations:
        rollouts = (it.get("proposer_update") or {}).get("rollouts") or []
        hops = sorted({k.rsplit("hop", 1)[1] for k in it if k.startswith("evolve/format/hop")}, key=int)
        rows.append(
            {
                "iteration": it["iteration"],
                "qa_size": it["qa_size"],
                "hrpo_rollouts": rollouts,
                "per_hop": {
                    h: {
                        "format": it.get(f"evolve/format/hop{h}", 0.0),
                        "difficulty": it.get(f"evolve/difficulty/hop{h}", 0.0),
                        "solver_pass_rate": it.get(f"evolve/solver_pass_rate/hop{h}", 0.0),
                        "question_mix": it.get(f"evolve/question_mix/hop{h}", 0.0),
                    }
                    for h in hops
                },
                "format": it.get("evolve/format", 0.0),
                "difficulty": it.get("evolve/difficulty", 0.0),
                "valid_rate": it.get("evolve/valid_rate", 0.0),
            }
        )
    return rows


__all__ = [
    "StageEval",
    "change_lines",
    "change_rows",
    "evolution_lines",
    "format_lines",
    "hop_groups",
    "hop_table",
    "proposer_lines",
    "proposer_summary",
    "stage_rows",
    "stages_table",
]

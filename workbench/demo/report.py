"""Plain-text tables the demo prints."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


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


__all__ = ["evolution_lines", "hop_table"]

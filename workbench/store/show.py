"""Plain-text views of trajectories for the terminal (`workbench show RUN_DIR [TRAJ_ID]`).

print(format_trajectory(store.get(traj_id)))
print(format_run_summary(store, role="solver"))
"""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING, Any

from workbench.trajectory import Step, Trajectory

if TYPE_CHECKING:
    from workbench.store.store import Store

RULE = "─" * 72


def clip(text: str | None, limit: int) -> str:
    """Keep the head and tail of long text, saying how much was cut (limit <= 0: keep all)."""
    text = text or ""
    if limit <= 0 or len(text) <= limit:
        return text
    head = limit * 2 // 3
    tail = limit - head
    return f"{text[:head]}\n  … [{len(text) - limit} chars cut] …\n{text[-tail:]}"


def _indent(text: str, prefix: str = "    ") -> str:
    return "\n".join(prefix + line for line in text.splitlines()) if text else prefix + "(empty)"


def _stamp(t: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(t)) if t else "-"


def _short(value: Any, limit: int) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _format_step(step: Step, limit: int) -> list[str]:
    flags = f"  [format: {', '.join(step.format_flags)}]" if step.format_flags else ""
    timing = f"gen {step.generate_s:.2f}s, exec {step.execute_s:.2f}s, ctx {step.context_tokens} tok"
    out = [f"── step {step.index}  ({timing}){flags}"]
    if step.think:
        out += ["  think:", _indent(clip(step.think.strip(), limit))]
    if step.code:
        out += ["  code:", _indent(clip(step.code.rstrip(), limit * 2))]
    if not step.think and not step.code:
        out += ["  raw:", _indent(clip(step.raw.strip(), limit))]
    for call in step.host_calls:
        result = f"error: {call.error}" if call.error else _short(call.result, 120)
        out.append(f"  tool {call.name}({_short(call.arguments, 80)}) → {result}  [{call.duration_s:.2f}s]")
    if step.observation is not None or step.observation_text:
        out += ["  output:", _indent(clip(step.observation_text.rstrip(), limit))]
    return out


def format_trajectory(traj: Trajectory, limit: int = 600) -> str:
    """A readable, terminal-width rendering; `limit` caps each think/output (code gets 2×; 0 = all)."""
    task = traj.task
    duration = f"{traj.ended_at - traj.started_at:.1f}s" if traj.ended_at else "unfinished"
    lines = [
        RULE,
        f"trajectory {traj.id}  run={traj.run_id or '-'}  role={traj.role}",
        f"started {_stamp(traj.started_at)}  ({duration}, {len(traj.steps)} steps, {traj.num_host_calls} host calls)",
        f"task {task.id}" + (f"  hops={traj.hops}" if traj.hops is not None else ""),
        _indent(clip(task.question, limit * 2), "  Q: "),
        f"  golden: {_short(task.golden_answers, 200)}",
    ]
    if traj.lineage:
        lines.append(f"lineage: {_short(traj.lineage, 200)}")
    lines.append(RULE)
    for step in traj.steps:
        lines += _format_step(step, limit)
    notepad = traj.steps[-1].notepad if traj.steps else {}
    lines.append(RULE)
    if notepad:
        lines += ["notepad:", _indent(clip(json.dumps(notepad, indent=2, ensure_ascii=False, default=str), limit * 2))]
    lines.append(f"final answer: {traj.final_answer if traj.final_answer is not None else '-'}")
    lines.append(f"termination: {traj.termination or '-'}" + (f"  error: {traj.error}" if traj.error else ""))
    spec = f"  (spec {traj.reward_spec})" if traj.reward_spec else ""
    rewards = ", ".join(f"{k}={v:.3g}" for k, v in traj.rewards.items()) or "-"
    lines.append(f"rewards: {rewards}{spec}")
    return "\n".join(lines)


def format_run_summary(store: Store, limit: int | None = 50, **filters: Any) -> str:
    """A table of the store's trajectories (newest `limit` by default) plus totals."""
    df = store.query(**filters)
    total = len(df)
    if total == 0:
        return f"{store.run_dir}: no trajectories" + (" match" if filters else "")
    shown = df.tail(limit) if limit else df
    header = f"{'id':<12} {'role':<9} {'hops':>4} {'steps':>5} {'tools':>5} {'reward':>7}  {'termination':<12} question"
    rows = [header, "-" * len(header)]
    for r in shown.itertuples():
        hops = "-" if r.hops is None or str(r.hops) == "<NA>" else str(r.hops)
        reward = "-" if r.reward != r.reward or r.reward is None else f"{r.reward:.3f}"
        rows.append(
            f"{r.id[:12]:<12} {_short(r.role, 9):<9} {hops:>4} {r.num_steps:>5} "
            f"{r.num_host_calls:>5} {reward:>7}  {_short(r.termination or '-', 12):<12} "
            f"{_short((r.question or '').replace(chr(10), ' '), 60)}"
        )
    rewards = df["reward"].dropna()
    mean = f"{rewards.mean():.3f}" if len(rewards) else "-"
    terms = ", ".join(f"{k}={v}" for k, v in df["termination"].fillna("-").value_counts().items())
    rows += ["", f"{total} trajectories ({len(shown)} shown), mean reward {mean}; {terms}"]
    return "\n".join(rows)

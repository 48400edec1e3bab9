"""A harness rollout's model-gateway calls as the viewer shows them: each trained call is a turn (its
model, tool calls, policy version, sampling, and where its segment starts and why it forked); the
auxiliary calls sit beside them, recorded and never trained on. Read from
`trajectory.metadata["gateway"]` (the gateway's `CallRecord`s, as dicts), so no gateway import.

    calls = harness_calls(traj, tokenizer)   # None for a trajectory no gateway recorded
    calls["by_step"][i]                      # the call behind step i (what its turn card shows)
    calls["segments"], calls["forks"]        # segment boundaries with their fork reasons; counts
    fork_count(traj.metadata)                # forks in one rollout (the list's column)
"""

from __future__ import annotations

import json
from typing import Any

from workbench.trajectory import Trajectory
from workbench.widgets._tokenizer import Decoder

ARGS_LIMIT = 300  # characters of a tool call's arguments on a turn card
TEXT_LIMIT = 2000  # characters of decoded text (the tokens a call added, an auxiliary reply)
FORK_NOTES = {
    "no_parent": "The request continues no recorded call (no assistant message in it)",
    "tools_changed": "The request's tools differ from the call it would continue",
    "history_edited": "An earlier message differs from what the recorded calls saw",
    "assistant_edited": "An assistant message differs from the reply the model sampled",
    "template_rewrites_history": "The chat template rewrites past turns (history = 'template')",
}


def model_calls(metadata: dict[str, Any] | None) -> dict[str, Any] | None:
    """The gateway's record in a trajectory's metadata, or None when no gateway recorded it."""
    gw = (metadata or {}).get("gateway")
    return gw if isinstance(gw, dict) and isinstance(gw.get("calls"), list) else None


def fork_count(metadata: dict[str, Any] | None) -> int | None:
    """How many times the rollout forked (a new segment with a reason); None when no gateway recorded it."""
    gw = model_calls(metadata)
    if gw is None:
        return None
    forks = gw.get("forks") or {}
    return int(sum(v for v in forks.values() if isinstance(v, (int, float))))


def _decoded(ids: list[int] | None, tokenizer: Decoder | None) -> str | None:
    if not ids or tokenizer is None:
        return None
    try:
        text = tokenizer.decode(list(ids))
    except Exception:  # a tokenizer that cannot map these ids: counts only
        return None
    return text if len(text) <= TEXT_LIMIT else text[:TEXT_LIMIT] + f"… [{len(text) - TEXT_LIMIT} characters cut]"


def _arguments(raw: Any) -> str:
    text = raw if isinstance(raw, str) else json.dumps(raw, ensure_ascii=False, default=str)
    return text if len(text) <= ARGS_LIMIT else text[:ARGS_LIMIT] + "…"


def _sampling(record: dict[str, Any]) -> dict[str, Any]:
    """The sampling as applied, and which fields the gateway set differently from what the harness asked."""
    asked, applied = record.get("sampling_requested") or {}, record.get("sampling_applied") or {}
    shown = {k: v for k, v in applied.items() if v not in (None, [])}
    overridden = sorted(k for k in applied if asked.get(k) is not None and asked.get(k) != applied.get(k))
    return {"applied": shown, "overridden": overridden}


def _call(record: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": record.get("id"),
        "model": record.get("model"),
        "endpoint": record.get("endpoint"),
        "version": record.get("policy_version"),
        "finish": record.get("finish_reason"),
        "latency_ms": round(float(record.get("latency_s") or 0.0) * 1000, 1),
        "streamed": bool(record.get("streamed")),
        "delivered": bool(record.get("delivered")),
        "tool_calls": [
            {"name": str(c.get("name")), "args": _arguments(c.get("arguments", ""))}
            for c in record.get("tool_calls") or []
        ],
        "reasoning": record.get("reasoning"),
        "sampling": _sampling(record),
    }


def _segments(traj: Trajectory, by_step: dict[int, dict[str, Any]]) -> list[dict[str, Any]]:
    """One entry per segment (`Trajectory.segments()`'s split): its steps, why it began, its mask counts."""
    out: list[dict[str, Any]] = []
    for step in traj.steps:
        if step.prompt_ids is not None or not out:
            call = by_step.get(step.index, {})
            out.append(
                {
                    "index": len(out),
                    "first_step": step.index,
                    "last_step": step.index,
                    "fork": call.get("fork"),
                    "prompt_tokens": len(step.prompt_ids or []),
                    "sampled_tokens": 0,
                    "observation_tokens": 0,
                }
            )
        seg = out[-1]
        seg["last_step"] = step.index
        seg["sampled_tokens"] += len(step.completion_ids)
        seg["observation_tokens"] += len(step.observation_ids)
    return out


def harness_calls(traj: Trajectory, tokenizer: Decoder | None = None) -> dict[str, Any] | None:
    """Everything the viewer shows of a harness rollout's calls (module docstring); None without a gateway."""
    gw = model_calls(traj.metadata)
    if gw is None:
        return None
    records = [r for r in gw["calls"] if isinstance(r, dict)]
    by_step: dict[int, dict[str, Any]] = {}
    auxiliary = []
    for n, record in enumerate(records):
        call = {**_call(record), "number": n + 1}
        step = record.get("step")
        if record.get("auxiliary") or step is None:
            prompt, sampled = record.get("prompt_ids") or [], record.get("completion_ids") or []
            auxiliary.append(
                {
                    **call,
                    "prompt_tokens": len(prompt),
                    "sampled_tokens": len(sampled),
                    "text": _decoded(sampled, tokenizer),
                }
            )
        elif 0 <= int(step) < len(traj.steps):
            fork = record.get("fork")
            call.update(segment_start=bool(record.get("segment_start")), parent=record.get("parent"), fork=fork)
            call["fork_note"] = FORK_NOTES.get(fork, "") if fork else ""
            call["added"] = _decoded(traj.steps[int(step)].observation_ids, tokenizer)
            by_step[int(step)] = call
    segments = _segments(traj, by_step)
    for seg in segments:
        for i in range(seg["first_step"], seg["last_step"] + 1):
            if i in by_step:
                by_step[i].update(segment=seg["index"], segments=len(segments))
    versions = sorted({c["version"] for c in [*by_step.values(), *auxiliary] if c["version"] is not None})
    forks = {str(k): int(v) for k, v in (gw.get("forks") or {}).items()}
    return {
        "tool_protocol": gw.get("tool_protocol"),
        "calls": len(records),
        "trained_calls": len(by_step),
        "by_step": by_step,
        "segments": segments,
        "forks": forks,
        "fork_count": sum(forks.values()),
        "versions": versions,
        "auxiliary": auxiliary,
    }

"""One trajectory as the viewer's front end draws it: plain JSON-able data, no HTML but the
highlighted code. Shared by `TrajectoryViewer` and `workbench report`.

    detail = trajectory_detail(traj, store)        # turns, tokens, rewards, history, links
    first_divergence(traj_a, traj_b)               # index of the first turn where they differ
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

from workbench.trajectory import Step, Trajectory
from workbench.widgets import _render
from workbench.widgets._attempts import attempts
from workbench.widgets._calls import harness_calls
from workbench.widgets._groups import group_of
from workbench.widgets._safe import finite
from workbench.widgets._tokenizer import Decoder

if TYPE_CHECKING:
    from workbench.store import Store

TEXT_LIMIT = 4000  # characters per text field; longer ones are cut (head and tail) and marked
VALUE_LIMIT = 800  # notepad values and tool arguments
_BUDGET = re.compile(r"\[[^\[\]\n]*\bleft\]")
NO_QUESTION = "(no question written: the proposal did not parse)"


def display_question(traj: Trajectory) -> str:
    """What a row should show as the question: a proposer's own question (its task text is the
    instructions it was given), else the task's question."""
    return proposer_question(traj.metadata) if traj.role == "proposer" else traj.task.question


def proposer_question(metadata: dict[str, Any]) -> str:
    """The question a proposer wrote, from its trajectory's metadata."""
    return str(metadata.get("question") or NO_QUESTION)


def _text(value: Any, limit: int = TEXT_LIMIT) -> dict[str, Any]:
    text = value if isinstance(value, str) else json.dumps(value, default=str, ensure_ascii=False)
    clipped, cut = _render.clip(text, limit)
    return {"text": clipped, "cut": cut}


def _joined(value: Any) -> str:
    return "".join(value) if isinstance(value, list) else str(value)


def _outputs(step: Step) -> list[dict[str, Any]]:
    """The observation as parts: stdout / stderr / result / error text, images, HTML."""
    obs = step.observation or {}
    parts: list[dict[str, Any]] = []
    outputs = obs.get("outputs")
    if isinstance(outputs, list) and outputs:
        for out in (o for o in outputs if isinstance(o, dict)):
            kind = out.get("output_type", "")
            if kind == "stream":
                parts.append(
                    {
                        "kind": "stderr" if out.get("name") == "stderr" else "stdout",
                        **_text(_joined(out.get("text", ""))),
                    }
                )
            elif kind == "error":
                tb = out.get("traceback") or [f"{out.get('ename', 'Error')}: {out.get('evalue', '')}"]
                parts.append({"kind": "error", **_text(_render._strip_ansi("\n".join(map(str, tb))))})
            elif isinstance(out.get("data"), dict):
                parts.append(_mime(out["data"]))
    else:
        for key, kind in (("stdout", "stdout"), ("result", "result"), ("text", "stdout"), ("stderr", "stderr")):
            if obs.get(key):
                parts.append({"kind": kind, **_text(str(obs[key]))})
        for out in obs.get("display", []) or []:
            if isinstance(out, dict):
                parts.append(_mime(out.get("data", out)))
    error = obs.get("error")
    if error and not any(p["kind"] == "error" for p in parts):
        parts.append(
            {
                "kind": "error",
                **_text(_render._strip_ansi(error if isinstance(error, str) else json.dumps(error, default=str))),
            }
        )
    return parts


def _mime(data: dict[str, Any]) -> dict[str, Any]:
    for mime in ("image/png", "image/jpeg"):
        if data.get(mime):
            return {"kind": "image", "src": f"data:{mime};base64,{_joined(data[mime]).strip()}"}
    if data.get("image/svg+xml"):
        return {"kind": "html", "html": _joined(data["image/svg+xml"])}
    if data.get("text/html"):
        return {"kind": "html", "html": _joined(data["text/html"])}
    return {"kind": "result", **_text(_joined(data.get("text/plain", "")))}


def _notepad(before: dict[str, Any], after: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for key, state in _render.notepad_diff(before, after).items():
        value = before[key] if state == "removed" else after[key]
        out.append({"key": key, "state": state, **_text(value, VALUE_LIMIT)})
    return out


def logprob_kind(traj: Trajectory) -> str:
    """Which logprobs `traj`'s policy stored: "scripted" (none: no model sampled), else what its
    `describe()` said (e.g. "processed (after temperature/top-k/top-p; raw for greedy)"), else
    "unknown"."""
    policy = (traj.lineage or {}).get("policy")
    if not isinstance(policy, dict):
        return "scripted" if policy == "scripted" else "unknown"
    if policy.get("backend") == "scripted":
        return "scripted"
    return str(policy.get("logprobs") or "unknown")


RAW_KIND = "raw (the model's own, before temperature/top-k/top-p)"


def _logprob_note(kind: str, stored: list[float], n: int) -> str:
    """One sentence on what the turn's logprobs are, and what they cannot tell."""
    if kind == "scripted":
        return "scripted policy: no model sampled these tokens, so they have no logprobs"
    if not stored:
        return "no logprobs stored for this turn"
    zeros = sum(lp == 0.0 for lp in stored)
    if kind == RAW_KIND:
        note = "log-softmax of the model's logits before any sampling processing; the processed ones on hover"
        return note + (f"; {zeros} of {n} are 0.0 to float precision: the model itself was certain" if zeros else "")
    note = "as the policy recorded them"
    if kind == "unknown":
        note = "the policy did not say whether these are the model's raw logprobs or processed ones"
    if zeros:
        note += (
            f"; {zeros} of {n} are exactly 0.0 (p = 1): the model was certain, or a sampling filter "
            "(top-k/top-p) left one candidate, which a processed logprob cannot tell apart"
        )
    return note


def _per_token(values: list[float] | None, n: int, total: int) -> list[float | None]:
    """`values` for the first `n` (model) tokens, None for a missing one and for the rest of `total`."""
    stored: list[float | None] = [float(v) for v in (values or [])[:n]]
    return stored + [None] * (total - len(stored))


def _tokens(step: Step, tokenizer: Decoder | None, kind: str) -> dict[str, Any]:
    """The turn's token ids with their env mask (1 = trained, 0 = observation), the logprobs shown (the
    model's raw ones when stored, else the processed ones; None where there is none: a scripted policy's
    or a missing one), `showing` which, and, with a tokenizer, each id decoded."""
    ids = list(step.completion_ids) + list(step.observation_ids)
    mask = [1] * len(step.completion_ids) + [0] * len(step.observation_ids)
    n = len(step.completion_ids)
    scripted = kind == "scripted"
    raw = None if scripted else step.raw_logprobs
    processed = None if scripted else step.logprobs
    showing = "raw" if raw else "processed" if processed else None
    shown = _per_token(raw or processed, n, len(ids))
    pieces = None
    if tokenizer is not None and ids:
        try:
            pieces = [tokenizer.decode([i]) for i in ids]
        except Exception:  # a tokenizer that cannot map these ids: show ids only
            pieces = None
    kind = RAW_KIND if raw else kind
    return {
        "ids": ids,
        "mask": mask,
        "logprobs": shown,
        "showing": showing,
        "processed": _per_token(processed, n, len(ids)) if raw and processed else None,  # for hover beside raw
        "pieces": pieces,
        "decoded_with": getattr(tokenizer, "source", "the viewer's tokenizer") if pieces is not None else None,
        "logprob_kind": kind,
        "logprob_note": _logprob_note(kind, [v for v in shown[:n] if v is not None], n),
        "prompt": None if step.prompt_ids is None else len(step.prompt_ids),
    }


def step_detail(
    traj: Trajectory, index: int, tokenizer: Decoder | None = None, call: dict[str, Any] | None = None
) -> dict[str, Any]:
    """Turn `index` as the viewer draws it; `call`: the model-gateway call behind it (`_calls.harness_calls`)."""
    step = traj.steps[index]
    before = traj.steps[index - 1].notepad if index > 0 else {}
    budget = _BUDGET.findall(step.observation_text or "")
    return {
        "index": index,
        "think": None if step.think is None else _text(step.think),
        "raw": None if step.code or step.think else _text(step.raw),
        "code": None if step.code is None else _text(step.code),
        "code_html": _render.code_html(step.code) if step.code else None,
        "outputs": _outputs(step),
        "shown": _text(step.observation_text) if step.observation_text else None,
        "output_cut": bool((step.observation or {}).get("truncated")),
        "timed_out": bool((step.observation or {}).get("timed_out")),
        "budget": budget[-1] if budget else None,
        "trimmed": index > 0 and step.prompt_ids is not None,
        "notepad": _notepad(before, step.notepad),
        "tools": [
            {
                "name": c.name,
                "args": _text(c.arguments, VALUE_LIMIT)["text"],
                "result": None if c.error else _text(c.result, VALUE_LIMIT)["text"],
                "error": c.error,
                "ms": round(c.duration_s * 1000, 1),
            }
            for c in step.host_calls
        ],
        "flags": list(step.format_flags),
        "reward": step.reward,
        "version": step.policy_version,  # the policy version that sampled the turn (asynchronous RL), else None
        "finish": step.finish_reason,
        "stats": {
            "completion tokens": len(step.completion_ids),
            "observation tokens": len(step.observation_ids),
            "context tokens": step.context_tokens,
            "generate s": round(step.generate_s, 3),
            "execute s": round(step.execute_s, 3),
        },
        "tokens": _tokens(step, tokenizer, logprob_kind(traj)),
        "call": call,
    }


def _history(store: Store, traj_id: str) -> list[dict[str, Any]]:
    return [
        {
            "spec": r["spec_name"],
            "total": r["total"],
            "rewards": r["rewards"],
            "at": r["created_at"],
            "author": r["author"],
            "reason": r["reason"],
        }
        for r in store.reward_records(traj_id)
    ]


def _links(store: Store, traj: Trajectory) -> tuple[dict[str, Any] | None, dict[str, Any]]:
    lineage = traj.lineage or {}
    origin_id = lineage.get("origin") or lineage.get("parent")
    origin = None
    if origin_id:
        origin = {"id": origin_id, "stored": origin_id in store}
        if origin["stored"]:
            o = store.get(origin_id)
            origin.update(role=o.role, reward=o.reward, question=display_question(o))
    return origin, attempts(store, traj)


def trajectory_detail(traj: Trajectory, store: Store | None = None, tokenizer: Decoder | None = None) -> dict[str, Any]:
    """Everything the viewer shows about `traj` (finite, JSON-able)."""
    policy = (traj.lineage or {}).get("policy")
    if isinstance(policy, dict):
        policy = policy.get("name") or policy.get("model") or json.dumps(policy, default=str)
    origin, tried = _links(store, traj) if store is not None else (None, {"items": [], "difficulty_from": ""})
    calls = harness_calls(traj, tokenizer)
    by_step = calls.pop("by_step") if calls is not None else {}
    return finite(
        {
            "id": traj.id,
            "role": traj.role,
            "run_id": traj.run_id,
            "task_id": traj.task.id,
            "question": display_question(traj),
            "prompt": traj.task.question if traj.role == "proposer" else None,
            "golden": list(traj.task.golden_answers),
            "final_answer": traj.final_answer,
            "termination": traj.termination or "running",
            "error": traj.error,
            "hops": traj.hops,
            "policy": policy,
            "checkpoint": (traj.lineage or {}).get("checkpoint"),
            "rewards": traj.rewards,
            "reward_spec": traj.reward_spec,
            "duration_s": None if traj.ended_at is None else traj.ended_at - traj.started_at,
            "history": _history(store, traj.id) if store is not None else [],
            "origin": origin,
            "children": tried["items"],
            "difficulty_from": tried["difficulty_from"],
            "group": group_of(store, traj) if store is not None else None,
            "gateway": calls,  # a harness rollout's calls: segments, forks, versions, auxiliary calls
            "steps": [step_detail(traj, i, tokenizer, by_step.get(i)) for i in range(len(traj.steps))],
        }
    )


def _signature(step: Step) -> tuple[str, str]:
    return ((step.code if step.code is not None else step.raw).strip(), step.observation_text.strip())


def first_divergence(a: Trajectory, b: Trajectory) -> int | None:
    """The first turn index where `a` and `b` wrote different code or saw different output;
    the shorter length when one is a prefix of the other; None when they are the same."""
    for i, (x, y) in enumerate(zip(a.steps, b.steps, strict=False)):
        if _signature(x) != _signature(y):
            return i
    return None if len(a.steps) == len(b.steps) else min(len(a.steps), len(b.steps))

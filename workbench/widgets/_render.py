"""HTML pieces the widgets and `workbench report` share: one step, a notepad diff, rewards.

Pure functions from trajectory data to HTML strings with inline styles, so they render the same
in an `ipywidgets.HTML`, a static report and a test's string assertions.

    html = step_html(traj, 2, previous_notepad=traj.steps[1].notepad)
"""

from __future__ import annotations

import functools
import html
import json
from typing import Any

from workbench.trajectory import HostCall, Step, Trajectory

MAX_FIELD_CHARS = 4000  # longer text is cut and marked, the full text stays in the store

_BOX = "border:1px solid #ddd;border-radius:4px;padding:4px 8px;margin:4px 0;"
_PRE = "white-space:pre-wrap;word-break:break-word;margin:0;font-family:monospace;font-size:12px;"
_DIFF_STYLE = {
    "added": "background:#e6ffec;",
    "changed": "background:#fff8c5;",
    "removed": "background:#ffebe9;text-decoration:line-through;",
    "same": "",
}


def esc(value: Any) -> str:
    return html.escape(str(value), quote=True)


def number(value: Any, fmt: str = ".2f") -> str:
    """`value` formatted, or "—" when missing (None / NaN)."""
    return "—" if value is None or value != value else format(value, fmt)


def clip(text: str, limit: int = MAX_FIELD_CHARS) -> tuple[str, bool]:
    """`text` cut to `limit` characters (head and tail kept) and whether it was cut."""
    if limit <= 0 or len(text) <= limit:
        return text, False
    head = limit * 2 // 3
    return f"{text[:head]}\n… [{len(text) - limit} characters cut] …\n{text[-(limit - head) :]}", True


def badge(text: str, colour: str = "#6e7781") -> str:
    return (
        f'<span class="wb-badge" style="background:{colour};color:#fff;border-radius:8px;'
        f'padding:0 6px;font-size:11px;margin-right:4px">{esc(text)}</span>'
    )


def section(title: str, body: str, cls: str) -> str:
    return (
        f'<div class="wb-{cls}" style="{_BOX}"><div style="font-weight:600;font-size:12px;'
        f'color:#57606a">{esc(title)}</div>{body}</div>'
    )


def pre(text: str, limit: int = MAX_FIELD_CHARS) -> str:
    text, cut = clip(text, limit)
    mark = badge("truncated", "#bc4c00") if cut else ""
    return f'{mark}<pre style="{_PRE}">{esc(text)}</pre>'


@functools.lru_cache(maxsize=1)
def _python_highlighter() -> tuple[Any, Any]:
    """pygments' Python lexer and inline-style HTML formatter, built once (the formatter's style
    table costs more than highlighting a turn's code)."""
    from pygments.formatters import HtmlFormatter
    from pygments.lexers import PythonLexer

    return PythonLexer(), HtmlFormatter(noclasses=True, nobackground=True)


def code_html(code: str) -> str:
    """Python source, syntax-highlighted by pygments with inline styles."""
    from pygments import highlight

    code, cut = clip(code)
    body = highlight(code, *_python_highlighter())
    return (badge("truncated", "#bc4c00") if cut else "") + f'<div class="wb-code-src">{body}</div>'


# -- observations ------------------------------------------------------------------------------
def _mime_html(data: dict[str, Any]) -> str:
    """The richest renderable part of a Jupyter mime bundle."""
    for mime in ("image/png", "image/jpeg"):
        if data.get(mime):
            src = "".join(data[mime]) if isinstance(data[mime], list) else str(data[mime])
            return f'<img class="wb-image" style="max-width:100%" src="data:{mime};base64,{src.strip()}"/>'
    if data.get("image/svg+xml"):
        svg = data["image/svg+xml"]
        return f'<div class="wb-image">{"".join(svg) if isinstance(svg, list) else svg}</div>'
    if data.get("text/html"):
        body = data["text/html"]
        return f'<div class="wb-html">{"".join(body) if isinstance(body, list) else body}</div>'
    text = data.get("text/plain", "")
    return pre("".join(text) if isinstance(text, list) else str(text))


def _output_html(out: dict[str, Any]) -> str:
    kind = out.get("output_type", "")
    if kind == "stream":
        text = out.get("text", "")
        text = "".join(text) if isinstance(text, list) else str(text)
        colour = "color:#cf222e;" if out.get("name") == "stderr" else ""
        return f'<div style="{colour}">{pre(text)}</div>'
    if kind == "error":
        tb = out.get("traceback") or [f"{out.get('ename', 'Error')}: {out.get('evalue', '')}"]
        return f'<div style="color:#cf222e">{pre(_strip_ansi(chr(10).join(tb)))}</div>'
    if "data" in out:
        return _mime_html(out["data"])
    return pre(json.dumps(out, default=str))


def _strip_ansi(text: str) -> str:
    import re

    return re.sub(r"\x1b\[[0-9;]*[A-Za-z]", "", text)


def observation_html(step: Step) -> str:
    """What the code produced: nbformat-style outputs (text, images, HTML, errors) when the
    observation has them, else its stdout/stderr/result/error fields; then what the model was
    shown, with truncation marked."""
    obs = step.observation or {}
    parts: list[str] = []
    outputs = obs.get("outputs")
    if isinstance(outputs, list) and outputs:
        parts += [_output_html(o) for o in outputs if isinstance(o, dict)]
    else:
        for key in ("stdout", "result", "text"):
            if obs.get(key):
                parts.append(pre(str(obs[key])))
        if obs.get("stderr"):
            parts.append(f'<div style="color:#cf222e">{pre(str(obs["stderr"]))}</div>')
        for out in obs.get("display", []) or []:
            if isinstance(out, dict):
                parts.append(_mime_html(out.get("data", out)))
    error = obs.get("error")
    if error and not (
        isinstance(outputs, list) and any(o.get("output_type") == "error" for o in outputs if isinstance(o, dict))
    ):
        text = error if isinstance(error, str) else json.dumps(error, default=str)
        parts.append(f'<div style="color:#cf222e">{pre(_strip_ansi(text))}</div>')
    marks = ""
    if obs.get("truncated") or "truncated" in step.observation_text.lower():
        marks += badge("output truncated", "#bc4c00")
    if obs.get("timed_out"):
        marks += badge("timed out", "#cf222e")
    shown = ""
    if step.observation_text:
        shown = (
            '<details><summary style="font-size:11px;color:#57606a">shown to the model</summary>'
            f"{pre(step.observation_text)}</details>"
        )
    body = marks + "".join(parts) + shown
    return body or '<i style="color:#8c959f">no output</i>'


# -- notepad, tools, stats, rewards ---------------------------------------------------------------
def notepad_diff(before: dict[str, Any], after: dict[str, Any]) -> dict[str, str]:
    """Per key: "added", "changed", "removed" or "same" going from `before` to `after`."""
    status = {
        k: ("same" if k in before and before[k] == v else "changed" if k in before else "added")
        for k, v in after.items()
    }
    status.update({k: "removed" for k in before if k not in after})
    return status


def notepad_html(before: dict[str, Any], after: dict[str, Any]) -> str:
    """The notepad after a step, each entry tinted by what the step did to it."""
    status = notepad_diff(before, after)
    if not status:
        return '<i style="color:#8c959f">empty</i>'
    rows = []
    for key, state in status.items():
        value = before[key] if state == "removed" else after[key]
        text = value if isinstance(value, str) else json.dumps(value, default=str, ensure_ascii=False)
        text, _ = clip(text, 800)
        rows.append(
            f'<tr class="wb-note wb-{state}" data-key="{esc(key)}" style="{_DIFF_STYLE[state]}">'
            f'<td style="font-weight:600;vertical-align:top;padding-right:8px">{esc(key)}</td>'
            f'<td><pre style="{_PRE}">{esc(text)}</pre></td>'
            f'<td style="font-size:11px;color:#57606a">{"" if state == "same" else state}</td></tr>'
        )
    return f'<table style="border-collapse:collapse;width:100%">{"".join(rows)}</table>'


def host_calls_html(calls: list[HostCall]) -> str:
    if not calls:
        return '<i style="color:#8c959f">none</i>'
    items = []
    for c in calls:
        args = json.dumps(c.arguments, default=str, ensure_ascii=False)
        result = c.error if c.error else json.dumps(c.result, default=str, ensure_ascii=False)
        colour = "color:#cf222e;" if c.error else ""
        items.append(
            f'<div class="wb-tool"><code>{esc(c.name)}({esc(clip(args, 300)[0])})</code> '
            f'<span style="color:#57606a;font-size:11px">{c.duration_s * 1000:.0f} ms</span>'
            f'<div style="{colour}">{pre(result, 600)}</div></div>'
        )
    return "".join(items)


def stats_html(step: Step) -> str:
    """Token counts, timings, finish reason and format flags of one step."""
    cells = [
        ("completion tokens", len(step.completion_ids)),
        ("observation tokens", len(step.observation_ids)),
        ("context tokens", step.context_tokens),
        ("prompt tokens", "—" if step.prompt_ids is None else len(step.prompt_ids)),
        ("generate", f"{step.generate_s:.2f} s"),
        ("execute", f"{step.execute_s:.2f} s"),
        ("finish", step.finish_reason or "—"),
    ]
    out = " · ".join(f'<span class="wb-stat">{esc(k)}: <b>{esc(v)}</b></span>' for k, v in cells)
    flags = "".join(badge(f, "#cf222e") for f in step.format_flags)
    return f'<div style="font-size:12px">{out} {flags}</div>'


def rewards_html(rewards: dict[str, float], spec: str | None = None) -> str:
    if not rewards:
        return '<i style="color:#8c959f">no rewards</i>'
    parts = [
        f'<span class="wb-reward" data-name="{esc(k)}">{esc(k)}=<b>{v:.3g}</b></span>'
        for k, v in sorted(rewards.items(), key=lambda kv: (kv[0] == "total", kv[0]))
    ]
    return " · ".join(parts) + (f' <span style="color:#57606a">({esc(spec)})</span>' if spec else "")


def header_html(traj: Trajectory) -> str:
    """Question, answers, termination and rewards of a trajectory."""
    lineage = traj.lineage or {}
    origin = lineage.get("origin") or lineage.get("parent")
    policy = lineage.get("policy")
    bits = [badge(traj.role, "#0969da"), badge(traj.termination or "running", "#6e7781")]
    if traj.hops is not None:
        bits.append(badge(f"{traj.hops} hop{'' if traj.hops == 1 else 's'}", "#8250df"))
    if policy:
        bits.append(
            badge(
                str(
                    policy
                    if isinstance(policy, str)
                    else policy.get("name", policy)
                    if isinstance(policy, dict)
                    else policy
                )
            )
        )
    gold = ", ".join(traj.task.golden_answers) or "—"
    return (
        f'<div class="wb-header" style="{_BOX}">{"".join(bits)} <code style="font-size:11px">'
        f'{esc(traj.id)}</code><div style="margin:4px 0"><b>Q:</b> {esc(traj.task.question)}</div>'
        f"<div><b>answer:</b> {esc(traj.final_answer or '—')} · <b>gold:</b> {esc(gold)}</div>"
        f"<div><b>rewards:</b> {rewards_html(traj.rewards, traj.reward_spec)}</div>"
        + (f'<div style="font-size:11px;color:#57606a">origin: {esc(origin)}</div>' if origin else "")
        + (f'<div style="color:#cf222e">{esc(traj.error)}</div>' if traj.error else "")
        + "</div>"
    )


def step_html(traj: Trajectory, index: int) -> str:
    """Everything about step `index`: think, code, output, host calls, notepad diff, stats."""
    if not traj.steps:
        return '<i style="color:#8c959f">this trajectory has no steps yet</i>'
    step = traj.steps[index]
    before = traj.steps[index - 1].notepad if index > 0 else {}
    think = pre(step.think) if step.think else pre(step.raw) if not step.code else "<i>—</i>"
    code = code_html(step.code) if step.code else '<i style="color:#8c959f">no code</i>'
    return (
        f'<div class="wb-step" data-index="{index}">'
        f'<div style="font-weight:600">step {index + 1} / {len(traj.steps)}</div>'
        + stats_html(step)
        + section("think", think, "think")
        + section("code", code, "code")
        + section("output", observation_html(step), "output")
        + section(f"host calls ({len(step.host_calls)})", host_calls_html(step.host_calls), "tools")
        + section("notepad (tinted: changed by this step)", notepad_html(before, step.notepad), "notepad")
        + "</div>"
    )


def side_by_side_html(left: Trajectory, right: Trajectory, index: int = -1) -> str:
    """Two trajectories in columns, each at step `index` (-1 = every step)."""

    def column(t: Trajectory) -> str:
        steps = range(len(t.steps)) if index < 0 else [min(index, len(t.steps) - 1)] if t.steps else []
        return header_html(t) + "".join(step_html(t, i) for i in steps)

    return (
        '<div class="wb-compare" style="display:flex;gap:8px">'
        f'<div style="flex:1;min-width:0">{column(left)}</div>'
        f'<div style="flex:1;min-width:0">{column(right)}</div></div>'
    )

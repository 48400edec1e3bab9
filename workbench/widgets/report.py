"""`workbench report RUN_DIR`: a run's dashboards as one standalone HTML file that works offline
(plotly.js is inlined once).

    from workbench.widgets import write_report
    path = write_report("runs/demo")                      # runs/demo/report.html
    html = report_html("runs/demo", pass_threshold=1.0)   # the same, as a string
"""

from __future__ import annotations

import html
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from workbench.widgets import _figures
from workbench.widgets._source import open_store

if TYPE_CHECKING:
    from workbench.store import Store

_PAGE = """<!doctype html>
<html><head><meta charset="utf-8"><title>{title}</title>
<style>body{{font-family:sans-serif;margin:24px;max-width:1200px}}
.grid{{display:grid;grid-template-columns:1fr 1fr;gap:12px}} table{{border-collapse:collapse}}
td,th{{border:1px solid #ddd;padding:2px 8px;font-size:13px}} h2{{margin-top:32px}}</style>
</head><body><h1>{title}</h1><p>{subtitle}</p>{body}</body></html>
"""


def _section(title: str, figures: list[Any], first: list[bool]) -> str:
    parts = []
    for fig in figures:
        # plotly.js goes inline with the first figure only; the rest reuse it.
        parts.append(fig.to_html(full_html=False, include_plotlyjs="inline" if first[0] else False))
        first[0] = False
    return f"<h2>{html.escape(title)}</h2><div class='grid'>{''.join(parts)}</div>"


def report_html(source: "Store | str | os.PathLike[str]", *, title: str | None = None,
                pass_threshold: float = _figures.PASS_THRESHOLD) -> str:
    """The whole report as one HTML string (see the module docstring)."""
    from workbench.widgets.evolution import evolution_figures, evolution_table

    store = open_store(source)
    df = store.query()
    first = [True]
    title = title or f"workbench run {store.run_dir.name}"
    counts = df.groupby(["role", "termination"]).size().rename("trajectories").reset_index() \
        if len(df) else df
    body = ["<h2>summary</h2>", counts.to_html(index=False) if len(df) else "<p>no trajectories</p>"]
    for role in sorted(df["role"].unique()) if len(df) else []:
        rows = df[df["role"] == role]
        body.append(_section(f"{role} rewards", [
            _figures.reward_histogram(rows, title=f"{role}: total reward"),
            _figures.pass_rate_by_hops(rows, threshold=pass_threshold,
                                       title=f"{role}: pass rate by hops")], first))
    metrics = store.metrics()
    if len(metrics):
        body.append(_section("training metrics", [
            _figures.metric_curves(metrics[metrics["name"] == name], title=name)
            for name in sorted(metrics["name"].unique())], first))
    if len(df) and (df["role"] == "proposer").any():
        table = evolution_table(store, pass_threshold)
        body.append(_section("self-evolution", list(evolution_figures(store, pass_threshold).values()),
                             first))
        body.append(table.to_html(index=False, float_format="{:.3f}".format, na_rep="—"))
    subtitle = (f"{len(df)} trajectories · {store.run_dir} · written "
                f"{time.strftime('%Y-%m-%d %H:%M:%S')} · pass = total reward ≥ {pass_threshold:g}")
    return _PAGE.format(title=html.escape(title), subtitle=html.escape(subtitle), body="".join(body))


def write_report(run_dir: "str | os.PathLike[str]", out: "str | os.PathLike[str] | None" = None,
                 **kwargs: Any) -> Path:
    """Write `report_html(run_dir)` to `out` (default `<run_dir>/report.html`); returns the path."""
    path = Path(out) if out is not None else Path(run_dir) / "report.html"
    text = report_html(run_dir, **kwargs)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)
    return path

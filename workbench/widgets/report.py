"""`workbench report RUN_DIR`: a run's dashboards and its trajectory viewer as one HTML file that
works offline (plotly.js and the viewer's code are inlined; nothing is fetched).

plotly.js and the page's data (the list, the embedded trajectories, the figures) travel gzipped
and base64-encoded, unpacked by the browser's own `DecompressionStream` (Chromium 80, Firefox 113,
Safari 16.4): a demo evolve run's report (288 trajectories, 59 figures) is 2.45 MB instead of
14.0. `report_data(html)` reads the data back in Python. Figures are drawn a few rows at a time as
they come within a screen of view.

    from workbench.widgets import write_report
    path = write_report("runs/demo")                      # runs/demo/report.html
    html = report_html("runs/demo", pass_threshold=1.0)   # the same, as a string

The viewer in the report is the notebook's viewer (same JS) over embedded data: the list holds
every trajectory; turns, tokens and rewards are embedded for the first `max_trajectories` of them.
Clicking a point of a self-evolution plot filters the viewer to the trajectories behind it.
"""

from __future__ import annotations

import base64
import gzip
import html
import json
import os
import re
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from workbench.errors import ConfigError
from workbench.widgets import _figures, _table
from workbench.widgets._detail import trajectory_detail
from workbench.widgets._plots import plotly_js
from workbench.widgets._safe import finite
from workbench.widgets._source import open_store
from workbench.widgets._static import STATIC, bundle, css
from workbench.widgets._tokenizer import find_tokenizer

if TYPE_CHECKING:
    import plotly.graph_objects as go

    from workbench.store import Store
    from workbench.trajectory import Trajectory

MAX_TRAJECTORIES = 300

_PAGE = """<!doctype html>
<html><head><meta charset="utf-8"><title>{title}</title>
<style>body{{font-family:system-ui,sans-serif;margin:24px auto;max-width:1280px;padding:0 16px}}
table.wb-summary{{border-collapse:collapse}}
.wb-summary td,.wb-summary th{{border:1px solid #ddd;padding:2px 8px;font-size:13px}}
h2{{margin-top:32px}} .wb-chunk{{margin-bottom:8px}} {css}</style>
</head><body><h1>{title}</h1><p>{subtitle}</p>{body}
<script type="application/gzip" id="wb-plotly">{plotly}</script>
<script type="application/gzip" id="wb-data">{data}</script>
<script>{js}
{boot}</script>
</body></html>
"""

# Unpack the data (gzip + base64, see `_packed`) and draw the viewer; then plotly.js, and each figure
# section once it comes near the screen (its height held meanwhile), so the first draw waits for
# the few figures in view, not for every one.
_BOOT = """
const CHUNK = 6;
async function unpack(id) {
  const bytes = Uint8Array.from(atob(document.getElementById(id).textContent), (c) => c.charCodeAt(0));
  const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
  return await new Response(stream).text();
}
(async function () {
  const plotly = unpack("wb-plotly");
  const data = JSON.parse(await unpack("wb-data"));
  const model = staticModel(data.viewer, data.details, data.links);
  renderViewer({ model, el: document.getElementById("wb-viewer") });
  new Function(await plotly).call(globalThis);  // defines Plotly, as the notebook's FigureGrid loads it
  const onClick = (name, point) => {
    const c = point.customdata;
    if (!Array.isArray(c) || c.length !== 2) return;
    const key = `${name}|${c[0]}|${c[1]}`;
    if (!data.links[key]) return;
    const hopCount = `${c[1]} hop${c[1] === 1 ? "" : "s"}`;
    model.send({ action: "link", key, label: `${name.replace(/_/g, " ")} · iteration ${c[0]} · ${hopCount}` });
    document.getElementById("wb-viewer").scrollIntoView();
  };
  const draws = new Map();
  const draw = (el) => { const d = draws.get(el); if (d) { draws.delete(el); d(); } };
  const near = typeof IntersectionObserver === "undefined" ? null : new IntersectionObserver((entries) => {
    for (const e of entries) if (e.isIntersecting) { near.unobserve(e.target); draw(e.target); }
  }, { rootMargin: "100% 0px" });  // within a screen of the visible part
  for (const section of data.sections) {
    for (let at = 0; at < section.figures.length; at += CHUNK) {  // a few rows of two figures each
      const figures = section.figures.slice(at, at + CHUNK);
      const el = document.getElementById(section.id).appendChild(document.createElement("div"));
      el.className = "wb-chunk";
      let held = 0;
      for (let i = 0; i < figures.length; i += 2) {
        held += Math.max(...figures.slice(i, i + 2).map((f) => f.layout.height || 450)) + 8;
      }
      el.style.minHeight = `${held}px`;
      draws.set(el, () => {
        for (const fig of figures) fig.layout.template = data.template;  // shipped once
        drawFigures(Plotly, el, figures, 2, onClick);
        watchSize(Plotly, el);
        el.style.minHeight = "";
      });
      if (near) near.observe(el); else draw(el);
    }
  }
})();
"""


def _figure_json(figures: dict[str, go.Figure]) -> list[dict[str, Any]]:
    """The figures as plotly JSON without their template: the page holds it once (`template`)."""
    out = []
    for name, fig in figures.items():
        data = finite(fig.to_plotly_json())
        data["layout"].pop("template", None)
        out.append({"name": name, **data})
    return out


def _sections(store: Store, df: Any, pass_threshold: float) -> tuple[list[dict[str, Any]], dict[str, list[str]]]:
    from workbench.widgets.evolution import CLICKABLE, evolution_figures, evolution_table, trajectories_behind

    sections: list[dict[str, Any]] = []
    for role in sorted(df["role"].unique()) if len(df) else []:
        rows = df[df["role"] == role]
        sections.append(
            {
                "title": f"{role} rewards",
                "figures": {
                    f"{role}_reward": _figures.reward_histogram(rows, title=f"{role}: total reward"),
                    f"{role}_pass_rate": _figures.pass_rate_by_hops(
                        rows, threshold=pass_threshold, title=f"{role}: pass rate by hops"
                    ),
                },
            }
        )
    metrics = store.metrics()
    if len(metrics):
        figures, constants = _figures.metric_panels(metrics, store.events())
        sections.append({"title": "training metrics", "figures": figures, "notes": constants})
    links: dict[str, list[str]] = {}
    if len(df) and (df["role"] == "proposer").any():
        sections.append(
            {
                "title": "self-evolution (click a point to open its trajectories)",
                "figures": evolution_figures(store, pass_threshold),
            }
        )
        for row in evolution_table(store, pass_threshold).itertuples():
            if row.hops != row.hops or row.hops is None:
                continue
            for name in CLICKABLE:
                links[f"{name}|{row.iteration}|{int(row.hops)}"] = trajectories_behind(
                    store, name, row.iteration, row.hops
                )
    return sections, links


def report_html(
    source: Store | str | os.PathLike[str],
    *,
    title: str | None = None,
    pass_threshold: float = _figures.PASS_THRESHOLD,
    max_trajectories: int = MAX_TRAJECTORIES,
) -> str:
    """The whole report as one HTML string (see the module docstring)."""
    store = open_store(source)
    df = _table.summary_frame(store)
    title = title or f"workbench run {store.run_dir.name}"
    sections, links = _sections(store, df, pass_threshold)
    body, data_sections = _body(store, df, sections, pass_threshold)
    ids = df["id"].tolist()[: max(0, max_trajectories)]
    details = {i: _detail(store, store.get(i)) for i in ids}
    data = json.dumps(
        finite(
            {
                "viewer": _viewer_state(store, ids, details),
                "details": details,
                "links": links,
                "sections": data_sections,
                "template": _figures.shared_template(),
            }
        ),
        allow_nan=False,
        ensure_ascii=False,
    )
    subtitle = (
        f"{len(df)} trajectories · {store.run_dir} · written "
        f"{time.strftime('%Y-%m-%d %H:%M:%S')} · pass = total reward ≥ {pass_threshold:g}"
        + (f" · turns embedded for the first {len(ids)}" if len(ids) < len(df) else "")
    )
    js = "\n".join(
        [
            bundle("viewer", module=False),
            bundle("figures", module=False),
            (STATIC / "static_model.js").read_text(encoding="utf-8"),
        ]
    )
    return _PAGE.format(
        title=html.escape(title),
        subtitle=html.escape(subtitle),
        body="".join(body),
        css=css("viewer") + css("figures"),
        plotly=_packed(plotly_js()),
        data=_packed(data),
        js=_script_safe(js),
        boot=_BOOT,
    )


def _packed(text: str) -> str:
    """`text` gzipped and base64-encoded (what the page's `unpack` reads; `mtime=0`: the same input
    gives the same bytes)."""
    return base64.b64encode(gzip.compress(text.encode("utf-8"), compresslevel=9, mtime=0)).decode("ascii")


def report_data(page: str, part: str = "data") -> Any:
    """What a report page carries, unpacked: `part="data"` (the default) the page's data as a dict
    (viewer, details, links, sections, template), `part="plotly"` the plotly.js source."""
    found = re.search(rf'<script type="application/gzip" id="wb-{part}">([^<]*)</script>', page)
    if found is None:
        raise ConfigError(f"no {part!r} part in this page; pass the text of a workbench report (report_html)")
    text = gzip.decompress(base64.b64decode(found.group(1))).decode("utf-8")
    return json.loads(text) if part == "data" else text


def _detail(store: Store, traj: Trajectory) -> dict[str, Any]:
    """What the viewer shows of `traj`, its tokens decoded with the run's tokenizer when one is on disk."""
    return trajectory_detail(traj, store, find_tokenizer(store, traj))


def _body(
    store: Store, df: Any, sections: list[dict[str, Any]], pass_threshold: float
) -> tuple[list[str], list[dict[str, Any]]]:
    """The page's HTML pieces (summary, viewer slot, one slot per figure section, the evolution table) and
    the figure data each section slot is filled from."""
    counts = (
        df.groupby(["role", "termination"], dropna=False).size().rename("trajectories").reset_index() if len(df) else df
    )
    body = [
        "<h2>summary</h2>",
        counts.to_html(index=False, classes="wb-summary", na_rep="—") if len(df) else "<p>no trajectories</p>",
        "<h2>trajectories</h2><div id='wb-viewer'></div>",
    ]
    data_sections = []
    for i, section in enumerate(sections):
        body.append(f"<h2>{html.escape(section['title'])}</h2>")
        if section.get("notes"):
            items = "".join(f"<li>{html.escape(note)}</li>" for note in section["notes"])
            summary = f"<summary>{len(section['notes'])} metrics constant over the run</summary>"
            body.append(f"<details class='wb-constants' open>{summary}<ul>{items}</ul></details>")
        body.append(f"<div id='wb-section-{i}'></div>")
        data_sections.append({"id": f"wb-section-{i}", "figures": _figure_json(section["figures"])})
    if len(df) and (df["role"] == "proposer").any():
        from workbench.widgets.evolution import evolution_table

        body.append(
            evolution_table(store, pass_threshold).to_html(
                index=False, float_format="{:.3f}".format, na_rep="—", classes="wb-summary"
            )
        )
    return body, data_sections


def _viewer_state(store: Store, ids: list[str], details: dict[str, Any]) -> dict[str, Any]:
    """The viewer's opening state: the run's table, the first trajectory selected at its first turn."""
    cols = _table.summary_columns(store)
    return {
        "table_json": _table.encode_table(cols)[0],
        "choices": _table.choices(cols),
        "query": {},
        "link_label": "",
        "selected": ids[0] if ids else "",
        "step": 0,
        "detail": details[ids[0]] if ids else {},
        "compare_state": {},
        "pinned": "",
        "notice": "",
    }


def _script_safe(text: str) -> str:
    """Text that cannot close the <script> element it sits in."""
    return text.replace("</script", "<\\/script").replace("</SCRIPT", "<\\/SCRIPT").replace("<!--", "<\\!--")


def write_report(run_dir: str | os.PathLike[str], out: str | os.PathLike[str] | None = None, **kwargs: Any) -> Path:
    """Write `report_html(run_dir)` to `out` (default `<run_dir>/report.html`); returns the path."""
    path = Path(out) if out is not None else Path(run_dir) / "report.html"
    text = report_html(run_dir, **kwargs)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)
    return path

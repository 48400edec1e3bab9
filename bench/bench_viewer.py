"""TrajectoryViewer on 10,000 trajectories (or an existing run, e.g. the demo's), measured in
Chromium inside a real JupyterLab, against baselines measured in the same Lab on the same store.

    .venv/bin/python bench/bench_viewer.py [--n 10000 | --run runs/demo/evolve] [--repeats 3] [--moves 20]

Prints, each beside its baseline and the ratio:
- open: from running the cell to the first page of rows and the first trajectory's turns on screen
  (median of --repeats; target ≤ 1 s), and to the whole list read (a run bigger than a page opens
  with its first page and reads the rest once that is drawn). Baselines: the floor, a plain ipywidgets.HTML of the first
  page of rows from the store's raw list query (`Store.columns`); and the old viewer's way, an
  ipywidgets Select of every row plus an HTML pane drawn in Python.
- the kernel's share of opening: `TrajectoryViewer(run)` built in this process beside the raw
  list query alone.
- next trajectory: from pressing "j" to the next trajectory's turns on screen (median and p95;
  target ≤ 100 ms), beside the Select baseline.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "browser"))
from browser_demo import build_large_store  # noqa: E402
from browser_lab import CHROMIUM, CHROMIUM_ARGS, lab_server, open_and_run_all  # noqa: E402

from bench._util import add_smoke_flag, figure, smoke_skip, timed  # noqa: E402
from workbench.store import Store  # noqa: E402
from workbench.widgets.viewer import LIST_COLUMNS  # noqa: E402

WARM = """import os, html, ipywidgets as w
from workbench.store import Store
from workbench.store import format_trajectory
from workbench.widgets import TrajectoryViewer
RUN = os.environ["WB_BENCH_RUN"]
'warm'"""
VIEWER = "viewer = TrajectoryViewer(RUN)\nviewer"
PLAIN = """store = Store.open_readonly(RUN)
cols = store.columns(("id", "role", "hops", "reward", "num_steps", "termination", "question"))
tr = lambda i: "".join(f"<td>{html.escape(str(cols[c][i]))[:80]}</td>" for c in cols)
plain = w.HTML("<table class='wb-plain'>" + "".join(f"<tr>{tr(i)}</tr>" for i in range(min(50, len(cols["id"]))))
               + "</table>")
plain"""
BASELINE = """store = Store.open_readonly(RUN)
df = store.query()
table = w.Select(options=[(f"{r.id[:8]} {r.role} r={r.reward} {r.question[:70]}", r.id) for r in df.itertuples()],
                 rows=12, layout=w.Layout(width="100%"))
pane = w.HTML()
pane.add_class("wb-baseline")
def show(change):
    t = store.get(change["new"])
    pane.value = f'<div data-id="{t.id}"><pre>' + html.escape(format_trajectory(t, limit=600)) + "</pre></div>"
table.observe(show, names="value")
show({"new": table.value})
w.VBox([table, pane])"""
CELLS = (WARM, VIEWER, PLAIN, BASELINE)
# when each cell's output is on screen (outputs of earlier runs carry data-old)
READY = {
    VIEWER: "(() => { const v = document.querySelector('.wb-viewer:not([data-old])');"
    " return !!(v && v.querySelector('.wb-row') && v.dataset.renderedId); })()",
    PLAIN: "!!document.querySelector('.wb-plain:not([data-old]) tr')",
    BASELINE: "!!(document.querySelector('.widget-select:not([data-old]) select option') && "
    "document.querySelector('.wb-baseline:not([data-old]) [data-id]'))",
}
# the viewer opens a big run with its first page and reads the rest once that is drawn
WHOLE = (
    "(() => { const v = document.querySelector('.wb-viewer:not([data-old])');"
    " return !!(v && v.dataset.renderedId && v.dataset.partial === ''); })()"
)
MARK_OLD = (
    "document.querySelectorAll('.wb-viewer, .wb-plain, .widget-select, .wb-baseline')"
    ".forEach((e) => { e.dataset.old = '1'; })"
)


def notebook(path: Path) -> Path:
    cells = [
        {"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [], "source": src} for src in CELLS
    ]
    path.write_text(
        json.dumps(
            {
                "cells": cells,
                "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"}},
                "nbformat": 4,
                "nbformat_minor": 5,
            }
        )
    )
    return path


def clear_outputs(page) -> None:
    """Lab's Edit > Clear Outputs of All Cells: each way opens on a page without the others' rows."""
    page.get_by_role("menuitem", name="Edit", exact=True).click()
    page.get_by_text("Clear Outputs of All Cells", exact=True).click()
    page.wait_for_function("!document.querySelector('.jp-Notebook .jp-OutputArea-output')", timeout=30_000)


def run_cell(page, source: str, clear: bool = True) -> tuple[float, float]:
    """Run the cell holding `source` (Shift+Enter), on a page cleared of outputs unless `clear`
    is False; seconds until its output is on screen, and until the viewer holds the whole list."""
    if clear:
        clear_outputs(page)
    page.evaluate(MARK_OLD)
    cell = page.locator(".jp-Notebook .jp-Cell").nth(CELLS.index(source))
    cell.locator(".jp-InputArea-prompt").click()
    page.keyboard.press("Escape")
    t0 = time.perf_counter()
    page.keyboard.press("Shift+Enter")
    page.wait_for_function(READY[source], polling="raf", timeout=120_000)
    shown = time.perf_counter() - t0
    if source == VIEWER:
        page.wait_for_function(WHOLE, polling="raf", timeout=120_000)
    return shown, time.perf_counter() - t0


def kernel_side(run: Path, repeats: int) -> tuple[float, float, float]:
    """Median seconds, in this process (the kernel's share), to build `TrajectoryViewer(run)`, to
    read its whole list afterwards (`refresh`; a run bigger than a page opens with the first), and
    to run the raw list query alone."""
    from workbench.widgets import TrajectoryViewer

    def raw() -> None:
        with Store.open_readonly(run) as store:
            store.columns(LIST_COLUMNS)

    TrajectoryViewer(run).store.close()  # imports and first-use caches, as in a warm kernel
    build, whole = [], []
    for _ in range(repeats):
        t = time.perf_counter()
        viewer = TrajectoryViewer(run)
        build.append(time.perf_counter() - t)
        whole.append(timed(viewer.refresh))
        viewer.store.close()
    return statistics.median(build), statistics.median(whole), statistics.median([timed(raw) for _ in range(repeats)])


MOVE_VIEWER = """async () => {
  const root = document.querySelector('.wb-viewer');
  const rows = [...root.querySelectorAll('.wb-row')].map(r => r.dataset.id);
  const next = rows[rows.indexOf(root.dataset.renderedId) + 1];
  const t0 = performance.now();
  root.dispatchEvent(new KeyboardEvent('keydown', {key: 'j', bubbles: true}));
  while (root.dataset.renderedId !== next) await new Promise(r => requestAnimationFrame(r));
  return performance.now() - t0;
}"""
MOVE_BASELINE = """async () => {
  const sel = document.querySelector('.widget-select select');
  const pane = document.querySelector('.wb-baseline');
  const next = sel.options[sel.selectedIndex + 1].value;
  const want = sel.options[sel.selectedIndex + 1].value;
  const t0 = performance.now();
  sel.focus();
  sel.selectedIndex = sel.selectedIndex + 1;
  sel.dispatchEvent(new Event('change', {bubbles: true}));
  const before = pane.innerHTML;
  while (pane.innerHTML === before) await new Promise(r => requestAnimationFrame(r));
  return performance.now() - t0;
}"""


def smoke(n: int) -> None:
    """The kernel-side figures on a small store; the browser part is left out (JupyterLab and Chromium
    take a minute to start)."""
    smoke_skip("the Chromium and JupyterLab part", "JupyterLab and Chromium take about a minute to start")
    with tempfile.TemporaryDirectory(prefix="wb-bench-viewer-") as tmp:
        run = Path(tmp) / "run"
        build_large_store(run, n)
        build, whole_read, raw = kernel_side(run, 1)
    figure("kernel: TrajectoryViewer(run) built", build, "s", baseline=raw)
    figure("kernel: then the whole list read", whole_read, "s", baseline=raw)
    figure("kernel: raw list query (Store.columns)", raw, "s")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=10_000, help="trajectories in the store built for the bench")
    ap.add_argument("--run", type=Path, help="measure this run directory instead (e.g. runs/demo/evolve)")
    ap.add_argument("--repeats", type=int, default=3, help="opens measured per way (median)")
    ap.add_argument("--moves", type=int, default=20)
    add_smoke_flag(ap)
    args = ap.parse_args()
    if args.smoke:
        smoke(200)
        return
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory(prefix="wb-bench-viewer-") as tmp:
        tmp_path = Path(tmp)
        run = args.run.resolve() if args.run else tmp_path / "run"
        if not args.run:
            t = time.perf_counter()
            build_large_store(run, args.n)
            print(f"store of {args.n} trajectories built in {time.perf_counter() - t:.1f} s", flush=True)
        with Store.open_readonly(run) as store:
            n = len(store)
        nb = notebook(tmp_path / "bench.ipynb")
        with lab_server(tmp_path / "lab", nb, env={"WB_BENCH_RUN": str(run)}) as url, sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            page = browser.new_page(viewport={"width": 1500, "height": 1100})
            open_and_run_all(page, url)  # warms the kernel, imports and the widget front ends
            page.wait_for_function("document.querySelector('.wb-baseline [data-id]')", timeout=300_000)
            page.reload()
            page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=90_000)
            page.wait_for_selector(
                ".jp-Notebook-ExecutionIndicator[data-status='idle']", timeout=90_000, state="attached"
            )
            opens: dict[str, list[tuple[float, float]]] = {VIEWER: [], PLAIN: [], BASELINE: []}
            for _ in range(args.repeats):
                for source in (PLAIN, BASELINE, VIEWER):
                    opens[source].append(run_cell(page, source))
            run_cell(page, BASELINE, clear=False)  # both on the page for the moves below
            page.locator(".wb-viewer .wb-row").first.click()
            moves = [page.evaluate(MOVE_VIEWER) for _ in range(args.moves)]
            base_moves = [page.evaluate(MOVE_BASELINE) for _ in range(args.moves)]
            browser.close()
        build, whole_read, raw = kernel_side(run, args.repeats)

    opened, plain, base_open = (statistics.median(t[0] for t in opens[s]) for s in (VIEWER, PLAIN, BASELINE))
    whole = statistics.median(t[1] for t in opens[VIEWER])
    q95 = lambda xs: sorted(xs)[max(0, round(0.95 * len(xs)) - 1)]  # noqa: E731
    where = str(args.run) if args.run else "built for the bench"
    print(f"Chromium, JupyterLab, {n} trajectories ({where}); median of {args.repeats} opens")
    figure("open: first page on screen (viewer)", opened, "s", baseline=plain, target="≤ 1 s", ok=opened <= 1.0)
    figure("open: plain HTML of the first page (floor)", plain, "s")
    figure("open: whole list in the viewer (searchable)", whole, "s", baseline=plain)
    figure("open: viewer vs old Select + HTML pane", opened, "s", baseline=base_open)
    figure("open: old Select + HTML pane (baseline)", base_open, "s")
    figure("kernel: TrajectoryViewer(run) built", build, "s", baseline=raw)
    figure("kernel: then the whole list read", whole_read, "s", baseline=raw)
    figure("kernel: raw list query (Store.columns)", raw, "s")
    med = statistics.median(moves)
    figure(
        "next trajectory, median (viewer)",
        med,
        "ms",
        baseline=statistics.median(base_moves),
        target="≤ 100 ms",
        ok=med <= 100,
    )
    figure("next trajectory, p95 (viewer)", q95(moves), "ms", baseline=q95(base_moves))
    figure("next trajectory, median (baseline)", statistics.median(base_moves), "ms")


if __name__ == "__main__":
    main()

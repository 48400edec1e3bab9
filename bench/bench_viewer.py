"""TrajectoryViewer on 10,000 trajectories, measured in Chromium inside a real JupyterLab, against
the old viewer's way (an ipywidgets Select of every row plus an HTML pane redrawn in Python),
measured in the same Lab, on the same store.

    .venv/bin/python bench/bench_viewer.py [--n 10000] [--moves 20]

Prints: time from running the cell to the first page of rows on screen (target ≤ 1 s), and from
pressing the "next" key to the next trajectory's turns on screen (median and p95; target
≤ 100 ms), each beside the baseline's.
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

from bench._util import figure  # noqa: E402

WARM = """import os, ipywidgets as w
from workbench.store import Store
from workbench.widgets import TrajectoryViewer, _render
RUN = os.environ["WB_BENCH_RUN"]
'warm'"""
VIEWER = "viewer = TrajectoryViewer(RUN)\nviewer"
BASELINE = """store = Store.open_readonly(RUN)
df = store.query()
table = w.Select(options=[(f"{r.id[:8]} {r.role} r={r.reward} {r.question[:70]}", r.id) for r in df.itertuples()],
                 rows=12, layout=w.Layout(width="100%"))
pane = w.HTML()
pane.add_class("wb-baseline")
def show(change):
    t = store.get(change["new"])
    pane.value = f'<div data-id="{t.id}">' + _render.header_html(t) + _render.step_html(t, 0) + "</div>"
table.observe(show, names="value")
show({"new": table.value})
w.VBox([table, pane])"""


def notebook(path: Path) -> Path:
    cells = [{"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [],
              "source": src} for src in (WARM, VIEWER, BASELINE)]
    path.write_text(json.dumps({"cells": cells, "metadata": {"kernelspec": {
        "display_name": "Python 3", "language": "python", "name": "python3"}},
        "nbformat": 4, "nbformat_minor": 5}))
    return path


def run_cell(page, index: int, ready_js: str) -> float:
    """Run cell `index` (Shift+Enter) and return seconds until `ready_js` holds."""
    cell = page.locator(".jp-Notebook .jp-Cell").nth(index)
    cell.locator(".jp-InputArea-prompt").click()
    page.keyboard.press("Escape")
    t0 = time.perf_counter()
    page.keyboard.press("Shift+Enter")
    page.wait_for_function(ready_js, polling="raf", timeout=120_000)
    return time.perf_counter() - t0


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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=10_000)
    ap.add_argument("--moves", type=int, default=20)
    args = ap.parse_args()
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory(prefix="wb-bench-viewer-") as tmp:
        tmp_path = Path(tmp)
        t = time.perf_counter()
        build_large_store(tmp_path / "run", args.n)
        print(f"store of {args.n} trajectories built in {time.perf_counter() - t:.1f} s", flush=True)
        nb = notebook(tmp_path / "bench.ipynb")
        with lab_server(tmp_path / "lab", nb, env={"WB_BENCH_RUN": str(tmp_path / "run")}) as url, \
                sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            page = browser.new_page(viewport={"width": 1500, "height": 1100})
            open_and_run_all(page, url)  # warms the kernel, imports and the widget front ends
            page.wait_for_function("document.querySelector('.wb-baseline [data-id]')", timeout=300_000)
            page.reload()
            page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=90_000)
            page.wait_for_selector(".jp-Notebook-ExecutionIndicator[data-status='idle']", timeout=90_000,
                                   state="attached")
            opened = run_cell(page, 1, "document.querySelector('.wb-viewer .wb-row') && "
                                       "document.querySelector('.wb-viewer').dataset.renderedId")
            base_open = run_cell(page, 2, "document.querySelector('.widget-select select option') && "
                                          "document.querySelector('.wb-baseline [data-id]')")
            page.locator(".wb-viewer .wb-row").first.click()
            moves = [page.evaluate(MOVE_VIEWER) for _ in range(args.moves)]
            base_moves = [page.evaluate(MOVE_BASELINE) for _ in range(args.moves)]
            browser.close()

    q95 = lambda xs: sorted(xs)[max(0, int(round(0.95 * len(xs))) - 1)]  # noqa: E731
    print(f"Chromium, JupyterLab, {args.n} trajectories; baseline: ipywidgets Select of every row + HTML pane")
    figure("open: first page on screen (viewer)", opened, "s", baseline=base_open, target="≤ 1 s",
           ok=opened <= 1.0)
    figure("open: first page on screen (baseline)", base_open, "s")
    med = statistics.median(moves)
    figure("next trajectory, median (viewer)", med, "ms", baseline=statistics.median(base_moves),
           target="≤ 100 ms", ok=med <= 100)
    figure("next trajectory, p95 (viewer)", q95(moves), "ms", baseline=q95(base_moves))
    figure("next trajectory, median (baseline)", statistics.median(base_moves), "ms")


if __name__ == "__main__":
    main()

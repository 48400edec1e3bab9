"""A training run launched from the TrainingLauncher in a real JupyterLab, by a click in Chromium: the
launch button starts a tiny asynchronous GRPO run in a child process, its reward curve appears live in
the widget, and the stop button ends it. Screenshot: `test-artifacts/launcher_curves.png`.
Set WORKBENCH_SKIP_BROWSER=1 to skip."""

from __future__ import annotations

import nbformat
import pytest
from browser_lab import lab_server, open_and_run_all, shot

pytestmark = [pytest.mark.browser, pytest.mark.slow]

# What a researcher writes in a cell: tiny inputs (a model built here, four tasks, a two-document corpus)
# and a launcher for them. The run never ends by itself (max_steps=500): the test stops it.
CELL = """\
import json, os, pathlib
from workbench.models.tiny import build_tiny_model
from workbench.widgets import TrainingLauncher

root = pathlib.Path(os.environ["WB_LAUNCH_ROOT"])
docs = [("Paris", "Paris is the capital of France."), ("Rome", "Rome is the capital of Italy.")]
texts = [f"{t}: {d}" for t, d in docs] + ["<search> capital </search> <answer> Paris </answer>"]
model = build_tiny_model(root / "model", texts * 4, vocab_size=320, n_layer=2, n_embd=32, n_head=2,
                         max_positions=512, seed=0)
with open(root / "tasks.jsonl", "w") as f:
    for i, (country, city) in enumerate([("France", "Paris"), ("Italy", "Rome")] * 2):
        task = {"id": f"t{i}", "question": f"What is the capital of {country}?", "golden_answers": [city]}
        f.write(json.dumps(task) + "\\n")
with open(root / "corpus.jsonl", "w") as f:
    for i, (title, text) in enumerate(docs):
        f.write(json.dumps({"id": str(i), "contents": f'"{title}"\\n{text}'}) + "\\n")
ui = TrainingLauncher(model_path=str(model), tasks_path=str(root / "tasks.jsonl"),
                      corpus_path=str(root / "corpus.jsonl"), output_dir=str(root / "run"),
                      store_path=str(root / "run"), num_generations=2, per_device_train_batch_size=4,
                      max_steps=500, max_turns=2, max_turn_tokens=12, max_completion_length=64,
                      async_rollouts=True, max_staleness=1, refresh_s=0.5)
ui
"""


def test_launch_from_the_widget_draws_live_curves(browser, tmp_path) -> None:
    notebook = tmp_path / "launcher.ipynb"
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(CELL)]), notebook)
    (tmp_path / "inputs").mkdir()
    with lab_server(tmp_path / "lab", notebook, env={"WB_LAUNCH_ROOT": str(tmp_path / "inputs")}) as url:
        page = browser.new_page(viewport={"width": 1300, "height": 1100})
        try:
            open_and_run_all(page, url)
            launch = page.locator("button.widget-button", has_text="launch")
            launch.wait_for(timeout=180_000)
            launch.click()
            out = page.locator(".jp-OutputArea-output").filter(has=launch)
            figure = page.locator(".wb-figure[data-name='training']")
            page.wait_for_function(  # the reward curve has its first point (the run's first step)
                """() => [...document.querySelectorAll(".wb-figure[data-name='training'] .legendtext")]
                         .some(t => t.textContent === 'reward')""",
                timeout=300_000,
            )
            assert figure.locator(".scatterlayer .trace").count() >= 1
            assert "latest trajectories" in out.inner_text()
            shot(page, "launcher_curves", out)
            out.locator("button.widget-button", has_text="stop").click()
            out.get_by_text("stopped").first.wait_for(timeout=60_000)
            assert not launch.is_disabled()
        except Exception:
            shot(page, "launcher_failure")
            raise

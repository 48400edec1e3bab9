"""A notebook's registrations reach the run it launches: tests/notebooks/registrations_launch.ipynb, executed
headless in a real ipykernel, registers each kind in a cell and trains one step through `launch()` with them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_notebooks import execute, text_of

NOTEBOOK = Path(__file__).with_name("registrations_launch.ipynb")

pytestmark = pytest.mark.slow


def test_what_a_cell_registers_trains_through_launch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    runs = tmp_path / "runs"
    nb = execute(NOTEBOOK, runs, tmp_path, monkeypatch, cell_timeout_s=600)
    text = text_of(nb)
    assert "status: finished" in text, text
    assert "step 1 reward 0.25" in text  # the cell's reward scored the child's episodes
    status = json.loads((runs / "registrations" / "launched" / "status.json").read_text())
    assert status["status"] == "finished" and status["summary"]["global_step"] == 1
    assert set(status["registrations"]) >= {
        "estimator doubled_nb",
        "reward nb.quarter",
        "policy backend nb_writer",
        "tool set nb_tools",
        "env source nbgame:",
    }
    assert "the caller's registrations: " in (runs / "registrations" / "launched" / "train.log").read_text()
    assert "tool set run: finished" in text  # NB-Agent episodes with the cell's tool set, in the child
    assert "the cell's tool in the episodes' prompt: True" in text  # the tool set's shout(...), in the child
    assert "env run: finished" in text and "env step 1" in text  # episodes of the cell's own environment class
    assert "status: failed" in text  # the second run names a backend holding a lock: it fails, saying why
    error = next(line for line in text.splitlines() if line.startswith("error:"))
    assert "unknown policy backend 'nb_locked'" in error
    assert "registration 'nb_locked' of the process that launched this one could not be copied" in error
    assert "cannot pickle '_thread.lock'" in error


def test_the_notebook_is_committed_without_outputs() -> None:
    import nbformat

    nb = nbformat.read(NOTEBOOK, as_version=4)
    assert all(not cell.get("outputs") for cell in nb.cells if cell.cell_type == "code")

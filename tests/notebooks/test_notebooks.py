"""The notebooks run top to bottom in a real ipykernel (nbclient), and what they make is right.

Each notebook writes its runs under $WORKBENCH_NOTEBOOK_RUNS (a temp dir here); executed copies
go to a temp dir too, never over the sources, which are committed with outputs cleared, and (the
tutorials of `notebooks/`) to docs/tutorials/executed/ under a "smoke size, <commit>" banner: the docs
site's Tutorials render them (docs/hooks/tutorials.py).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import nbformat
import pytest
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOK_DIR = ROOT / "notebooks"
NOTEBOOKS = sorted(p for p in NOTEBOOK_DIR.glob("*.ipynb") if not p.name.startswith("_"))
REQUIRED = {
    "00_teaching_demo",
    "01_repl_basics",
    "02_run_agent",
    "03_rewards",
    "04_self_evolution",
    "05_training",
    "06_real_model",
    "07_your_own_agent",
}
EXECUTED_DIR = ROOT / "docs" / "tutorials" / "executed"  # gitignored; the docs build renders what is here
REAL_MODEL = NOTEBOOK_DIR / "06_real_model.ipynb"  # its own test: it shares the session's converted SmolLM2
CELL_TIMEOUT_S = 300


def execute(
    path: Path, runs: Path, out_dir: Path, monkeypatch: pytest.MonkeyPatch, cell_timeout_s: int = CELL_TIMEOUT_S
) -> Any:
    """Run a notebook with the venv's python3 kernel; save the executed copy in `out_dir`."""
    monkeypatch.setenv("WORKBENCH_NOTEBOOK_RUNS", str(runs))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(
        nb, timeout=cell_timeout_s, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}
    )
    try:
        client.execute()
    finally:
        nbformat.write(nb, out_dir / path.name)
    if path.parent == NOTEBOOK_DIR:
        publish(nb, path.name)
    return nb


def publish(nb: Any, name: str) -> None:
    """Write an executed tutorial to EXECUTED_DIR for the docs, under its smoke-size banner (one write, then a
    rename, so a docs build reading it meanwhile sees the old copy or the new one whole)."""
    import copy as copying
    from datetime import UTC, datetime

    from workbench.figures import current_commit

    commit = current_commit()
    short = commit.split("+")[0][:12] + ("+dirty" if commit.endswith("+dirty") else "")
    banner = (
        f"> **Smoke size, {short}.** Executed headless by the test suite "
        f"(`tests/notebooks/test_notebooks.py`, {datetime.now(UTC):%Y-%m-%d}) at the smallest sizes that check "
        "the code: its figures mean nothing."
    )
    copy = copying.deepcopy(nb)
    copy.cells.insert(0, nbformat.v4.new_markdown_cell(banner))
    EXECUTED_DIR.mkdir(parents=True, exist_ok=True)
    partial = EXECUTED_DIR / f".{name}.partial"
    nbformat.write(copy, partial)
    partial.replace(EXECUTED_DIR / name)


def text_of(nb: Any) -> str:
    """All stream and text/plain output of a notebook, joined."""
    parts = []
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            parts.append(out.get("text") or out.get("data", {}).get("text/plain", ""))
    return "\n".join(parts)


def widget_views(nb: Any) -> int:
    return sum(
        "application/vnd.jupyter.widget-view+json" in out.get("data", {})
        for cell in nb.cells
        for out in cell.get("outputs", [])
    )


def open_store(run_dir: Path):
    from workbench.store import Store

    assert (run_dir / "trajectories.sqlite").exists(), f"no store in {run_dir}"
    return Store.open_readonly(run_dir)


# -- what each notebook must have produced ---------------------------------------------------------
def check_teaching(nb: Any, runs: Path) -> None:
    text = text_of(nb)
    assert "3 turns, ended by: submitted" in text and "<think>" in text and "<output>" in text
    assert "run forever          -> timed out, interrupted" in text and "still alive          -> 42" in text
    store = open_store(runs / "00_teaching_demo")
    df = store.query()
    assert len(df) == 16 and set(df["reward_spec"]) == {"search_r1"}
    assert 0 < (df["reward"] == 1.0).sum() < 16, "the noisy batch should have both hits and misses"
    assert list(store.reward_history(df["id"].iloc[0])["spec_name"]) == ["l0", "search_r1"]
    assert widget_views(nb) >= 1


def check_repl(nb: Any, runs: Path) -> None:
    text = text_of(nb)
    for expected in [
        "hello from the sandbox\n42",
        "[image/png 1x1]",
        "ZeroDivisionError - division by zero",
        "timed out: True | interrupted: True | killed: False",
        "Network is unreachable",
        "truncated: True",
        "characters truncated",
        "Final answer submitted: 4",
        "must be str, got int",
        "notepad facts: ['the sentence has 4 words']",
        "SECRET_API_KEY in the kernel: False",
    ]:
        assert expected in text, expected
    assert "uid, /root/.ssh visible, ~/.ssh visible: (" in text and "False, False)" in text


def check_agent(nb: Any, runs: Path) -> None:
    store = open_store(runs / "02_run_agent")
    trajs = list(store.iter_trajectories())
    assert len(trajs) == 8
    for t in trajs:
        assert t.termination == "submitted", (t.termination, t.error)
        assert t.final_answer in t.task.golden_answers
        assert t.rewards["total"] == 1.0
    assert "8 episodes, 8 correct" in text_of(nb)
    assert "OpenEnv client: done True reward 1.0" in text_of(nb)
    assert widget_views(nb) >= 1


def check_rewards(nb: Any, runs: Path) -> None:
    store = open_store(runs / "03_rewards")
    df = store.query()
    assert len(df) == 10 and set(df["reward_spec"]) == {"asearcher"}
    history = store.reward_history(df["id"].iloc[0])
    assert list(history["spec_name"]) == ["l0", "asearcher"]
    assert list(history["reason"]) == ["L0 reward", "F1 instead of EM"]
    assert set(history["author"]) == {"notebook"}
    assert len(set(df["reward"])) > 1, "the noisy solver should give differing rewards"
    assert widget_views(nb) >= 1


def check_evolution(nb: Any, runs: Path) -> None:
    run_dir = runs / "04_self_evolution"
    store = open_store(run_dir)
    proposers = store.query(role="proposer")
    assert len(proposers) == 6
    qa = [json.loads(line) for line in (run_dir / "iter_0" / "qa.jsonl").read_text().splitlines()]
    assert qa and {row["metadata"]["origin"] for row in qa} <= set(proposers["id"])
    solvers = store.query(role="solver")
    assert len(solvers) > 0 and set(solvers["origin_id"]) <= set(proposers["id"])
    assert "(origin is the proposer: True)" in text_of(nb) and "origin is the proposer: False" not in text_of(nb)
    assert widget_views(nb) >= 1


def check_training(nb: Any, runs: Path) -> None:
    run_dir = runs / "05_training" / "run"
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows if "reward" in r] == [1, 2]
    assert (run_dir / "final" / "config.json").exists()
    assert "status: finished" in text_of(nb)
    assert widget_views(nb) >= 1


def check_real_model(nb: Any, runs: Path) -> None:
    from workbench.demo.config import PRESETS

    text, run_dir = text_of(nb), runs / "06_real_model"
    assert "smollm2-135m-instruct: 134.5M parameters" in text and "<|im_start|>assistant" in text
    stages = ["eval_zero_shot", "eval_sft", "eval_grpo"]
    held_out = [{t.task.id for t in open_store(run_dir / s).iter_trajectories()} for s in stages]
    assert len(held_out[0]) == PRESETS["fast_smollm2"].eval_tasks and held_out[0] == held_out[1] == held_out[2]
    assert "format over" in text and "status: finished" in text
    rows = [json.loads(line) for line in (run_dir / "grpo" / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows if "reward" in r] == [1]  # the launcher's GRPO step ran and logged
    assert len(list(open_store(run_dir / "before_after").iter_trajectories())) == 2 * len(held_out[0])
    assert "question " in text and "first difference at turn" in text
    assert widget_views(nb) >= 3  # zero-shot viewer, launcher, compare viewer


def check_own_agent(nb: Any, runs: Path) -> None:
    text, run_dir = text_of(nb), runs / "07_your_own_agent"
    trajs = list(open_store(run_dir / "rollouts").iter_trajectories())
    assert len(trajs) == 9 and {t.role for t in trajs} == {"harness"}
    assert sum(t.rewards.get("total") == 1.0 for t in trajs) == 9  # the scripted model's tool call computes it
    assert [t.metadata["gateway"]["forks"] for t in trajs].count({"history_edited": 1}) == 1
    assert all(t.metadata["gateway"]["calls"][0]["tool_calls"][0]["name"] == "python" for t in trajs)
    assert "8 rollouts, 8 correct, 16 model calls" in text and "forks: {'history_edited': 1} | segments: 2" in text
    rows = [json.loads(line) for line in (run_dir / "grpo" / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows if "reward" in r] == [1, 2] and "status: finished" in text
    assert "8 training rollouts; policy versions of their calls: [0, 1]" in text
    assert widget_views(nb) >= 3  # the rollouts' viewer, the launcher, the training rollouts' viewer


CHECKS: dict[str, Callable[[Any, Path], None]] = {
    "00_teaching_demo": check_teaching,
    "01_repl_basics": check_repl,
    "02_run_agent": check_agent,
    "03_rewards": check_rewards,
    "04_self_evolution": check_evolution,
    "05_training": check_training,
    "06_real_model": check_real_model,
    "07_your_own_agent": check_own_agent,
}


# -- tests ----------------------------------------------------------------------------------------
def test_the_notebooks_are_all_here_and_committed_without_outputs():
    assert REQUIRED <= {p.stem for p in NOTEBOOKS}
    for path in NOTEBOOKS:
        nb = nbformat.read(path, as_version=4)
        nbformat.validate(nb)
        assert nb.metadata["kernelspec"]["name"] == "python3", path.name
        for cell in nb.cells:
            if cell.cell_type == "code":
                assert cell.outputs == [] and cell.execution_count is None, f"{path.name}: clear outputs"


@pytest.mark.slow
def test_python3_kernel_is_this_interpreter(tmp_path, monkeypatch):
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("import sys; print(sys.prefix)")])
    path = tmp_path / "probe.ipynb"
    nbformat.write(nb, path)
    ran = execute(path, tmp_path, tmp_path, monkeypatch)
    assert ran.cells[0].outputs[0]["text"].strip() == sys.prefix


@pytest.mark.slow
@pytest.mark.parametrize("path", [p for p in NOTEBOOKS if p != REAL_MODEL], ids=lambda p: p.stem)
def test_notebook_runs_and_makes_what_it_says(path, tmp_path, monkeypatch):
    run_and_check(path, tmp_path, monkeypatch)


@pytest.mark.slow
@pytest.mark.timeout(1800)  # the real 135M model through SFT, a GRPO step and three evaluations
def test_real_model_notebook_at_smoke_size(smollm2_models, tmp_path, monkeypatch):
    monkeypatch.setenv("WORKBENCH_MODELS_DIR", str(smollm2_models))
    run_and_check(REAL_MODEL, tmp_path, monkeypatch, cell_timeout_s=900)


def run_and_check(path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cell_timeout_s: int = CELL_TIMEOUT_S):
    runs, out = tmp_path / "runs", tmp_path / "executed"
    out.mkdir()
    try:
        nb = execute(path, runs, out, monkeypatch, cell_timeout_s)
    except CellExecutionError as exc:
        pytest.fail(f"{path.name} failed; executed copy in {out / path.name}\n{exc}")
    check = CHECKS.get(path.stem)
    if check is not None:
        check(nb, runs)

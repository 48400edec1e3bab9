"""Both roles learning on the toy model with the hop proposer, at smoke size, as researchers run it
(`bench/bench_coevolution.py --hop --smoke`): every stage runs for real (the demo's solver stages, the hop
proposer's SFT, one Dr. Zero iteration with HRPO and GRPO, the held-out evaluation, the checks), the
iteration-0 weights are kept, the checks' episodes are stored by side, the figures are recorded as smoke, and
the last two lines are the ones scripts read."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
NUMBER = r"([+-]?\d+\.\d+)"


@pytest.mark.slow
@pytest.mark.timeout(1800)  # every stage with real kernels: minutes on a busy machine
def test_a_smoke_run_prints_both_checks_last(tmp_path, torch_threads):
    from transformers import AutoModelForCausalLM

    from workbench.figures import RESULTS_ENV, read_figures
    from workbench.store import Store

    run, results = tmp_path / "run", tmp_path / "results"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRL_EXPERIMENTAL_SILENCE": "1", RESULTS_ENV: str(results)}
    bench = ROOT / "bench" / "bench_coevolution.py"
    command = [
        sys.executable,
        str(bench),
        "--hop",
        "--smoke",
        "--run-dir",
        str(run),
        "--torch-threads",
        str(torch_threads),
    ]
    proc = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=1700)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    proposer_line, heldout_line = proc.stdout.strip().splitlines()[-2:]
    p = re.fullmatch(
        rf"proposer difficulty: {NUMBER} -> {NUMBER} \(change {NUMBER} \[{NUMBER}, {NUMBER}\]\)", proposer_line
    )
    h = re.fullmatch(
        rf"held-out accuracy: {NUMBER}% -> {NUMBER}% \(change {NUMBER} \[{NUMBER}, {NUMBER}\]\)", heldout_line
    )
    assert p and h, (proposer_line, heldout_line)
    first, last, change, low, high = map(float, p.groups())
    assert 0 <= first <= 1 and 0 <= last <= 1 and abs(last - first - change) < 2e-3 and low <= change <= high

    figures = {f.name: f for f in read_figures(results)}
    assert all(f.mode == "smoke" for f in figures.values())
    tag = " [seed 0, 1 HRPO steps, check 4x1]"  # each run's settings name its figures
    assert abs(figures["hop proposer difficulty change" + tag].value - change) < 1e-3
    held = figures["hop held-out accuracy change" + tag]
    assert held.ok == (figures["hop held-out accuracy change, 95% low" + tag].value > 0)

    for role in ("proposer", "solver"):  # the first weights, loadable
        assert AutoModelForCausalLM.from_pretrained(run / "iteration0" / role).num_parameters() > 0
    for side in ("eval_sft", "eval_final"):  # the fast preset's 12 held-out questions, paired
        with Store.open_readonly(run / side) as store:
            assert len(list(store.iter_trajectories())) == 12
    with Store.open_readonly(run / "coevolution_check") as store:
        proposals = [t for t in store.iter_trajectories() if t.role == "proposer"]
    by_side = {side: [t for t in proposals if t.lineage.get("phase") == side] for side in ("check_first", "check_last")}
    assert [len(v) for v in by_side.values()] == [4, 4]  # one per check prompt and side
    assert {t.task.metadata["iteration"] for t in by_side["check_first"]} == {-1}
    assert {t.task.metadata["iteration"] for t in by_side["check_last"]} == {1}
    first_prompts = sorted(t.task.metadata["prompt_index"] for t in by_side["check_first"])
    assert first_prompts == sorted(t.task.metadata["prompt_index"] for t in by_side["check_last"]) == [0, 1, 2, 3]

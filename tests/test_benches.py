"""Every bench still runs: each `bench/bench_*.py --smoke` (tiny sizes, seconds) exits 0 and records its figures.

Figures are not checked (they live in the benches, printed against baselines of the same run); what
is checked is that no bench has rotted, e.g. by reaching for a private attribute that has since gone,
and that the figures it printed were recorded (`workbench/figures.py`), complete and marked smoke, in a
temp folder (`$WORKBENCH_RESULTS_DIR`), never in the repository's bench/results/. A smoke run may leave
out a part that needs vLLM or a browser, and then says so in its output.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import fields
from pathlib import Path

import pytest

from workbench.figures import RESULTS_ENV, Figure, read_figures

ROOT = Path(__file__).resolve().parents[1]
BENCHES = sorted((ROOT / "bench").glob("bench_*.py"))


def test_every_bench_is_found():
    assert len(BENCHES) >= 16 and ROOT / "bench" / "bench_agent.py" in BENCHES


@pytest.mark.slow
@pytest.mark.parametrize("bench", BENCHES, ids=lambda p: p.stem)
def test_bench_runs_in_smoke_mode(bench: Path, tmp_path: Path) -> None:
    results = tmp_path / "results"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRL_EXPERIMENTAL_SILENCE": "1", "BENCH_DIR": str(tmp_path)}
    env[RESULTS_ENV] = str(results)
    proc = subprocess.run(
        [sys.executable, str(bench), "--smoke"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, f"{bench.name} --smoke exited {proc.returncode}:\n{out[-4000:]}"
    for line in out.splitlines():
        if "skipped" in line and line.startswith("smoke:"):
            assert ": " in line.removeprefix("smoke: skipped "), line  # a skip names its reason
    assert_smoke_records(bench, results, out)


def assert_smoke_records(bench: Path, results: Path, out: str) -> None:
    """Every record has every field, names this bench and says smoke; a bench that printed a figure line
    and skipped nothing recorded at least one."""
    files = sorted(results.glob("*.jsonl")) if results.exists() else []
    assert {f.stem for f in files} <= {bench.stem}, files
    lines = [json.loads(line) for f in files for line in f.read_text().splitlines()]
    assert all(set(line) == {f.name for f in fields(Figure)} for line in lines), lines[:1]
    figures = read_figures(results) if files else []
    assert all(f.mode == "smoke" and "--smoke" in f.command and f.commit and f.machine.cores for f in figures)
    if "smoke: skipped" not in out:
        assert figures, f"{bench.name} --smoke recorded no figure:\n{out[-2000:]}"


@pytest.mark.slow
def test_coevolution_oracle_smoke_prints_the_line_scripts_parse(tmp_path: Path) -> None:
    """`bench_coevolution.py --oracle --smoke`: every stage at toy size (teacher, SFT, evaluation, one HRPO
    step, evaluation), ending in `oracle difficulty: A -> B (change D [LO, HI])` with A, B in [0, 1] and
    LO <= D <= HI; its figures recorded as smoke."""
    import re

    results = tmp_path / "results"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRL_EXPERIMENTAL_SILENCE": "1", RESULTS_ENV: str(results)}
    bench = ROOT / "bench" / "bench_coevolution.py"
    proc = subprocess.run(
        [sys.executable, str(bench), "--oracle", "--smoke", "--run-dir", str(tmp_path / "run")],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-4000:]
    last = proc.stdout.strip().splitlines()[-1]
    number = r"([+-]?\d+\.\d+)"
    match = re.fullmatch(rf"oracle difficulty: {number} -> {number} \(change {number} \[{number}, {number}\]\)", last)
    assert match, last
    before, after, change, low, high = map(float, match.groups())
    assert 0 <= before <= 1 and 0 <= after <= 1 and low <= change + 1e-9 and change <= high + 1e-9
    assert abs(after - before - change) < 2e-3
    assert (tmp_path / "run" / "trajectories.sqlite").exists()  # the run's store, for the EvolutionDashboard
    assert_smoke_records(bench, results, out)

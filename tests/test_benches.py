"""Every bench still runs: each `bench/bench_*.py --smoke` (tiny sizes, seconds) exits 0.

Figures are not checked (they live in the benches, printed against baselines of the same run); what
is checked is that no bench has rotted, e.g. by reaching for a private attribute that has since gone.
A smoke run may leave out a part that needs vLLM or a browser, and then says so in its output.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BENCHES = sorted((ROOT / "bench").glob("bench_*.py"))


def test_every_bench_is_found():
    assert len(BENCHES) >= 16 and ROOT / "bench" / "bench_agent.py" in BENCHES


@pytest.mark.slow
@pytest.mark.parametrize("bench", BENCHES, ids=lambda p: p.stem)
def test_bench_runs_in_smoke_mode(bench: Path, tmp_path: Path) -> None:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRL_EXPERIMENTAL_SILENCE": "1", "BENCH_DIR": str(tmp_path)}
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

"""`python -m workbench.kernel.tour`: the printed tour of one sandboxed kernel (`workbench kernels demo`)."""

from __future__ import annotations

import subprocess
import sys


def test_demo_kernel_shows_isolation():
    r = subprocess.run([sys.executable, "-m", "workbench.kernel.tour"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert "REACHED" not in out and "blocked" in out
    assert "'(absent)'" in out and "hunter2" not in out
    assert "PermissionError" in out and "the host's secret" not in out
    assert "MemoryError" in out and "timed_out, interrupted" in out
    assert "characters truncated" in out and "gone = True" in out

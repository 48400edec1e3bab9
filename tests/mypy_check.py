"""mypy on one file with the project's configuration, in a subprocess (mypy's in-process API leaves
state behind in the test worker), sharing the gate's cache so that it is warm after `make check`."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run_mypy(path: Path) -> tuple[int, str]:
    """(exit status, report) of `mypy --strict` on `path`, following imports silently."""
    argv = [sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml")]
    argv += ["--cache-dir", str(ROOT / ".mypy_cache"), "--follow-imports=silent", "--strict", str(path)]
    res = subprocess.run(argv, capture_output=True, text=True, cwd=ROOT, timeout=900)
    return res.returncode, res.stdout + res.stderr

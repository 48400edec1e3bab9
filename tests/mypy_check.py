"""mypy on one file with the project's configuration, in a subprocess (mypy's in-process API leaves
state behind in the test worker), sharing the gate's cache so that it is warm after `make check`."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run_mypy(path: Path) -> tuple[int, str]:
    """(exit status, report) of mypy on `path` with exactly the gate's options, so that every module it
    imports is read from the cache `make check` left (any extra flag, `--strict` included, changes the
    options each cached module was checked with, and mypy checks all of them again: 2-5 minutes)."""
    argv = [sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml")]
    argv += ["--cache-dir", str(ROOT / ".mypy_cache"), str(path)]
    res = subprocess.run(argv, capture_output=True, text=True, cwd=ROOT, timeout=900)
    return res.returncode, res.stdout + res.stderr

"""The CPU demo at smoke sizes, run once per test session and shared (a few minutes on a busy CPU).

tests/conftest.py imports `fast_demo`, so every module sees one instance; tests using it run in
the xdist group "readme" (one worker runs the demo once). They read the run dir and must not
change it: a test that runs the demo again does so in a copy.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest


@dataclass
class DemoRun:
    run_dir: Path  # <work>/runs/demo: the layout `make demo` leaves behind
    result: Any  # the DemoResult
    lines: list[str] = field(default_factory=list)  # what the demo printed


@pytest.fixture(scope="session")
def fast_demo(tmp_path_factory, torch_threads) -> DemoRun:
    """`run_demo` with the "fast" preset into a fresh `<work>/runs/demo`."""
    from workbench.demo import DemoConfig, run_demo

    run_dir = tmp_path_factory.mktemp("work") / "runs" / "demo"
    lines: list[str] = []
    result = run_demo(DemoConfig.preset("fast", run_dir=str(run_dir), torch_threads=torch_threads), out=lines.append)
    return DemoRun(run_dir, result, lines)


__all__ = ["DemoRun", "fast_demo"]

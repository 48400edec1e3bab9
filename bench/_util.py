"""Tiny helpers for bench scripts: time things, print a figure with its ratio to a baseline, and record it.

Every figure a bench prints is also appended as a JSON record to `bench/results/<bench>.jsonl`
(`$WORKBENCH_RESULTS_DIR` overrides the folder; see `workbench/figures.py`): `figure` prints and records,
`record` records a figure the bench prints its own way. The run's mode comes from its argv: `--smoke` or
`--fast` is "smoke", `--quick` is "quick".
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

from workbench.figures import Figure, FigureLog, Mode


def _mode(argv: list[str]) -> Mode:
    return "smoke" if {"--smoke", "--fast"} & set(argv) else "quick" if "--quick" in argv else "full"


def _bench_name(argv0: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", Path(argv0).stem).lstrip(".-") or "bench"


# One log per bench process, made at import: the machine's load is read as the bench starts.
LOG = FigureLog(_bench_name(sys.argv[0]), mode=_mode(sys.argv))


def p50(xs: list[float]) -> float:
    return statistics.median(xs)


def timed(fn: Callable[[], object]) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def figure(
    name: str, value: float, unit: str, *, baseline: float | None = None, target: str = "", ok: bool | None = None
) -> None:
    """Print one line: name, value, ratio to the baseline (if any) and the target verdict; and record it."""
    ratio = f"  ratio {value / baseline:.2f}" if baseline else ""
    verdict = "" if ok is None else ("  [ok]" if ok else "  [MISSED]")
    tgt = f"  (target {target})" if target else ""
    print(f"{name:<44} {value:10.3f} {unit:<6}{ratio}{tgt}{verdict}", flush=True)
    record(name, value, unit, baseline=baseline, target=target, ok=ok)


def record(
    name: str, value: float, unit: str, *, baseline: float | None = None, target: str = "", ok: bool | None = None
) -> Figure:
    """Record a figure the bench prints its own way (the printed line stays as it is; scripts parse it)."""
    return LOG.record(name, value, unit, target=target, baseline=baseline, ok=ok)


def add_smoke_flag(parser: argparse.ArgumentParser) -> None:
    """`--smoke`: tiny sizes, a few seconds; tests/test_benches.py runs every bench so, to see that it still runs."""
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="tiny sizes, a few seconds: checks that the bench runs (figures mean nothing)",
    )


def smoke_skip(part: str, reason: str) -> None:
    """Say what a smoke run leaves out, and why (a smoke run never skips silently)."""
    print(f"smoke: skipped {part}: {reason}", flush=True)

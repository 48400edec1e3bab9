"""Tiny helpers for bench scripts: time things, print a figure with its ratio to a baseline."""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable


def p50(xs: list[float]) -> float:
    return statistics.median(xs)


def timed(fn: Callable[[], object]) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def figure(
    name: str, value: float, unit: str, *, baseline: float | None = None, target: str = "", ok: bool | None = None
) -> None:
    """Print one line: name, value, ratio to the baseline (if any) and the target verdict."""
    ratio = f"  ratio {value / baseline:.2f}" if baseline else ""
    verdict = "" if ok is None else ("  [ok]" if ok else "  [MISSED]")
    tgt = f"  (target {target})" if target else ""
    print(f"{name:<44} {value:10.3f} {unit:<6}{ratio}{tgt}{verdict}", flush=True)


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

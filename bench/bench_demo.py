"""The CPU demo's wall time and peak memory: a fresh run, then a second run that reuses its cache.

Runs `python -m workbench.demo` in a child process (exactly what `make demo` runs), samples the summed
RSS of its whole process tree (the trainer plus every sandboxed kernel) every 0.5 s, and prints the
time of each stage from `summary.json`. The baseline is the fresh run measured in the same invocation;
the second run's ratio shows what the cache saves (RL is re-run every time, by design).

    .venv/bin/python bench/bench_demo.py [--run-dir runs/bench_demo] [--fast] [--once]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _util import add_smoke_flag, figure, smoke_skip


def tree_rss(proc: psutil.Process) -> int:
    total = 0
    for p in [proc, *proc.children(recursive=True)]:
        try:
            total += p.memory_info().rss
        except psutil.Error:  # a kernel that just exited
            pass
    return total


def run_demo(run_dir: str, *, fresh: bool, fast: bool) -> tuple[float, int, dict]:
    cmd = [sys.executable, "-m", "workbench.demo", "--run-dir", run_dir] + ["--fresh"] * fresh + ["--fast"] * fast
    t0 = time.monotonic()
    child = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    peak = [0]
    done = threading.Event()

    def sample() -> None:
        proc = psutil.Process(child.pid)
        while not done.wait(0.5):
            try:
                peak[0] = max(peak[0], tree_rss(proc))
            except psutil.Error:
                return

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    log = []
    for line in child.stdout:  # type: ignore[union-attr]
        log.append(line)
        if line.startswith(("==", "held-out", "  iteration", "   (")):
            print("   |", line.rstrip(), flush=True)
    child.wait()
    done.set()
    wall = time.monotonic() - t0
    if child.returncode:
        sys.exit(f"demo failed (exit {child.returncode}):\n{''.join(log[-40:])}")
    return wall, peak[0], json.loads((Path(run_dir) / "summary.json").read_text())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--run-dir", default="runs/bench_demo")
    ap.add_argument("--fast", action="store_true", help="the smoke-sized demo (about a minute)")
    ap.add_argument("--once", action="store_true", help="only the fresh run")
    add_smoke_flag(ap)
    args = ap.parse_args()
    if args.smoke:
        smoke_skip(
            "the demo run",
            "its smallest form (--fast) takes minutes of both cores; tests/demo runs that form, "
            "`bench_demo.py --fast --once` times it",
        )
        return

    wall, peak, summary = run_demo(args.run_dir, fresh=True, fast=args.fast)
    for stage, seconds in summary["seconds"].items():
        figure(f"  {stage[:42]}", seconds, "s")
    before = next(r["em"] for r in summary["before"] if r["hops"] == "all")
    after = next(r["em"] for r in summary["after"] if r["hops"] == "all")
    figure(
        "held-out accuracy gain (points)",
        (after - before) * 100,
        "pts",
        target=">= 20",
        ok=(after - before) * 100 >= 20 if not args.fast else None,
    )
    figure("fresh demo wall time", wall / 60, "min", target="<= 15 min", ok=wall <= 900 if not args.fast else None)
    figure("fresh demo peak RSS (process tree)", peak / 2**30, "GiB")
    if not args.once:
        wall2, peak2, _ = run_demo(args.run_dir, fresh=False, fast=args.fast)
        figure("cached second run wall time", wall2 / 60, "min", baseline=wall / 60)
        figure("cached second run peak RSS", peak2 / 2**30, "GiB", baseline=peak / 2**30)


if __name__ == "__main__":
    main()

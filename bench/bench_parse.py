"""Turn parsing on degenerate turns, against a linear scan of the same text measured in the same run.

    .venv/bin/python bench/bench_parse.py [--reps 5]

For each shape (each one was quadratic, or worse, in a regex parser) at 100 KB and 1 MB: the CPU
time of `parse_turn` (the least of `--reps` runs, so that other processes on a busy machine add
little), its ratio to `re.finditer("<", text)` over the same text (one pass that visits every
tag), and the 1 MB / 100 KB ratio (about 10 when parsing is linear). Target: a 1 MB turn of any
shape in at most 50 ms.
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from _util import add_smoke_flag, figure, record  # noqa: E402

from workbench.agent.degenerate_turns import DEGENERATE_TURNS  # noqa: E402
from workbench.agent.parsing import parse_turn  # noqa: E402

SHAPES = {**DEGENERATE_TURNS, "prose": lambda n: "word " * (n // 5)}
TAG = re.compile("<")


def cpu_s(fn, text: str, reps: int) -> float:
    times = []
    for _ in range(reps):
        t0 = time.process_time()
        fn(text)
        times.append(time.process_time() - t0)
    return min(times)


def scan(text: str) -> int:
    return sum(1 for _ in TAG.finditer(text))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=5)
    add_smoke_flag(parser)
    args = parser.parse_args()
    if args.smoke:
        args.reps = 1
    sizes = (("10KB", 10_000), ("100KB", 100_000)) if args.smoke else (("100KB", 100_000), ("1MB", 1_000_000))
    big_label = sizes[1][0]
    worst = 0.0
    for shape, make in SHAPES.items():
        per_size = {}
        for label, n in sizes:
            text = make(n)
            baseline = cpu_s(scan, text, args.reps)
            value = cpu_s(parse_turn, text, args.reps)
            per_size[label] = value
            figure(f"{shape} {label}: finditer('<')", baseline * 1e3, "ms")
            big = label == "1MB"
            figure(
                f"{shape} {label}: parse_turn",
                value * 1e3,
                "ms",
                baseline=baseline * 1e3,
                target="<= 50 ms" if big else "",
                ok=value <= 0.05 if big else None,
            )
        worst = max(worst, per_size[big_label])
        ratio = per_size[big_label] / per_size[sizes[0][0]]
        print(f"{shape:<44} {big_label} / {sizes[0][0]} {ratio:10.2f}  (linear: ~10)\n", flush=True)
        record(f"{shape} {big_label} / {sizes[0][0]}", ratio, "x", target="~10 (linear)")
    figure(
        f"worst {big_label} parse_turn",
        worst * 1e3,
        "ms",
        target="<= 50 ms",
        ok=worst <= 0.05 if big_label == "1MB" else None,
    )


if __name__ == "__main__":
    main()

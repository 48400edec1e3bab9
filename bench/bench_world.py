"""How long a synthetic world takes to build, against writing the same rows as JSON lines.

    .venv/bin/python bench/bench_world.py [--sizes 300 10000 100000]

The baseline is the I/O floor: serialising the finished corpus + QA rows to a JSONL file in
the same run. The ratio says how many "writes of the result" generation costs.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

from workbench.worlds import World

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _util import add_smoke_flag, record


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="+", default=[300, 10_000, 100_000])
    ap.add_argument("--seed", type=int, default=0)
    add_smoke_flag(ap)
    args = ap.parse_args()
    if args.smoke:
        args.sizes = [300]
    print(f"{'passages':>9} {'questions':>9} {'generate_s':>10} {'corpus_s':>9} {'write_jsonl_s':>13} {'ratio':>6}")
    for n in args.sizes:
        t0 = time.perf_counter()
        world = World.generate(args.seed, n)
        t1 = time.perf_counter()
        rows = world.corpus()
        t2 = time.perf_counter()
        with tempfile.TemporaryDirectory() as d:
            with (Path(d) / "all.jsonl").open("w") as fh:
                for row in rows + world.qa_rows("train") + world.qa_rows("test"):
                    fh.write(json.dumps(row) + "\n")
        t3 = time.perf_counter()
        gen = (t1 - t0) + (t2 - t1)
        print(
            f"{n:>9} {len(world.questions):>9} {t1 - t0:>10.2f} {t2 - t1:>9.2f} "
            f"{t3 - t2:>13.2f} {gen / (t3 - t2):>6.1f}x"
        )
        record(f"{n} passages: generate", t1 - t0, "s")
        record(f"{n} passages: corpus", t2 - t1, "s")
        record(f"{n} passages: write jsonl", t3 - t2, "s")
        record(f"{n} passages: generate / write jsonl", gen / (t3 - t2), "x")


if __name__ == "__main__":
    main()

"""Opening a corpus lazily (`Corpus.open`) against reading it in (`Corpus.from_jsonl`), same run.

    .venv/bin/python bench/bench_corpus.py              # ~200 MB synthetic JSONL, ~1 min
    .venv/bin/python bench/bench_corpus.py --mb 50 --no-eager

1. Row-offset scan (first open): MB/s, against a plain read of the same bytes (the disk / page-cache
   speed: the file was just written, so both read from the page cache) and against a Python
   `for line in f: line.strip()` loop.
2. A reopen (offsets file reused) against `Corpus.from_jsonl` (load time and traced memory).
3. Random row access: µs per `corpus[i]` and per `corpus.hit(i, s)`, against the in-memory list.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _util import add_smoke_flag, figure, p50

from workbench.search import Corpus
from workbench.search.corpus import scan_offsets

WORDS = "the of and in to was is for on as with by he at from his an were are which this also be".split()


def write_corpus(path: Path, mb: int, seed: int = 0) -> int:
    """Wikipedia-shaped rows (~650 bytes of contents on average, a few blank lines)."""
    rng = random.Random(seed)
    vocab = WORDS + [
        "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(3, 10))) for _ in range(5000)
    ]
    n = 0
    with path.open("w", encoding="utf-8") as f:
        while f.tell() < mb << 20:
            text = " ".join(rng.choices(vocab, k=rng.randint(40, 160)))
            f.write(json.dumps({"id": str(n), "contents": f'"Title {n}"\n{text}'}) + "\n")
            n += 1
            if n % 997 == 0:
                f.write("\n")
    return n


def best(fn, repeat: int = 3) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def raw_read(path: Path) -> None:
    buf = bytearray(1 << 20)
    with path.open("rb", buffering=0) as f:
        while f.readinto(buf):
            pass


def python_lines(path: Path) -> int:
    with path.open("rb") as f:
        return sum(1 for line in f if line.strip())


def scan(path: Path) -> int:
    fd = os.open(path, os.O_RDONLY)
    try:
        return sum(len(p) for p in scan_offsets(fd, os.fstat(fd).st_size, show_progress=False))
    finally:
        os.close(fd)


def traced(fn):
    tracemalloc.start()
    try:
        out = fn()
        return out, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mb", type=int, default=200, help="size of the synthetic corpus")
    ap.add_argument("--reads", type=int, default=20000, help="random row reads to time")
    ap.add_argument("--no-eager", action="store_true", help="skip Corpus.from_jsonl (slow, GBs at scale)")
    add_smoke_flag(ap)
    args = ap.parse_args()
    if args.smoke:
        args.mb, args.reads = 1, 200
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "corpus.jsonl"
        rows = write_corpus(path, args.mb)
        mb = path.stat().st_size / 1e6
        print(f"corpus: {mb:.0f} MB, {rows:,} rows, {os.cpu_count()} CPUs", flush=True)

        t_raw, t_lines, t_scan = (
            best(lambda: raw_read(path)),
            best(lambda: python_lines(path)),
            best(lambda: scan(path)),
        )
        assert scan(path) == rows
        figure("read the bytes (baseline)", mb / t_raw, "MB/s")
        figure("python line loop (line.strip())", mb / t_lines, "MB/s", baseline=mb / t_raw)
        figure("scan row offsets", mb / t_scan, "MB/s", baseline=mb / t_raw)

        first = best(lambda: Corpus.open(path, show_progress=False), repeat=1)  # writes the offsets file
        (lazy, lazy_peak) = traced(lambda: Corpus.open(path))
        reopen = best(lambda: Corpus.open(path))
        figure("Corpus.open, first (scan + save offsets)", first, "s")
        figure("Corpus.open, again (offsets reused)", reopen * 1e3, "ms")
        figure("Corpus.open traced peak", lazy_peak / 1e6, "MB")
        eager = None
        if not args.no_eager:
            t = time.perf_counter()
            (eager, eager_peak) = traced(lambda: Corpus.from_jsonl(path))
            t_eager = time.perf_counter() - t
            figure("Corpus.from_jsonl (baseline)", t_eager, "s")
            figure("Corpus.from_jsonl traced peak (baseline)", eager_peak / 1e6, "MB")
            figure("open again / from_jsonl time", reopen / t_eager, "x")

        rng = random.Random(1)
        idx = [rng.randrange(rows) for _ in range(args.reads)]
        per = []
        for _ in range(5):
            t = time.perf_counter()
            for i in idx:
                lazy[i]
            per.append((time.perf_counter() - t) / len(idx))
        lazy_us = p50(per) * 1e6
        t = time.perf_counter()
        for i in idx:
            lazy.hit(i, 1.0)
        hit_us = (time.perf_counter() - t) / len(idx) * 1e6
        base = None
        if eager is not None:
            t = time.perf_counter()
            for i in idx:
                eager.hit(i, 1.0)
            base = (time.perf_counter() - t) / len(idx) * 1e6
            figure("in-memory hit(i) (baseline)", base, "µs")
        figure("lazy corpus[i], random i", lazy_us, "µs")
        figure("lazy hit(i), random i", hit_us, "µs", baseline=base)


if __name__ == "__main__":
    main()

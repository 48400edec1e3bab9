"""Full-text search: query latency over a big run, and what keeping the index costs a run's writes.

    .venv/bin/python bench/bench_fts.py [--n 10000] [--writes 600] [--steps 8]

Prints: search latency (the median of 5 runs of each of several queries: words in any order, a
prefix, a rare word, a common word, symbols) over `--n` trajectories, against a substring scan (SQL LIKE)
of the question and answer columns of the same store (what the viewer's search did before, and it
never looked at code or output); and writes/s (one transaction per trajectory, synchronous=FULL as
a run writes) with the index against the same store code with indexing switched off, in
alternating chunks of 20. Each is given as wall time and as this process's CPU time (on a shared
machine, waiting for a core can be most of the wall time); and the pages each write adds to the WAL
(what a commit fsyncs; a count, free of the machine's noise). Targets: search <= 100 ms; the index
adds <= 10% to writes.

Where the index's cost lies (profiled here): not in Python (building a trajectory's index row is
0.19 ms of a 7 ms write, the FTS5 insert 0.02 ms) but in the pages a commit writes: about 17.7 WAL
frames a trajectory with the index against 12.6 without (FTS5 writes its content row, a new segment,
its structure record and its idx entry on every commit). A contentless table would save about one of
those five, but SQLite 3.40 (this Python's) can only delete from one given the old text, which a
rewritten trajectory would have to be decoded again to give; so the index stays as it is.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "tests" / "store"))
from _util import add_smoke_flag, figure  # noqa: E402
from store_helpers import make_trajectory  # noqa: E402

from workbench.store import Store, _rows, _search  # noqa: E402

QUERIES = ("museum town", "town 7 museum", "founder 12", "foun", "step", "print(search", "->")


def ms(fn, repeat: int = 5) -> tuple[float, float]:
    """The median wall and CPU time of `repeat` calls of fn(), in ms. CPU time is this process's
    own (a single-threaded query's latency on an idle core); wall time also counts waiting for a
    core, which on a shared machine can be most of it."""
    wall, cpu = [], []
    for _ in range(repeat):
        w0, c0 = time.perf_counter(), time.process_time()
        fn()
        wall.append((time.perf_counter() - w0) * 1000)
        cpu.append((time.process_time() - c0) * 1000)
    return statistics.median(wall), statistics.median(cpu)


@contextmanager
def index_off(off: bool) -> Iterator[None]:
    """Store writes without the full-text index (its document and its insert switched off)."""
    saved = (_rows.document, _search.index_row)
    if off:
        _rows.document = lambda data: ()  # type: ignore[assignment]
        _search.index_row = lambda *args, **kwargs: None  # type: ignore[assignment]
    try:
        yield
    finally:
        _rows.document, _search.index_row = saved


def write_seconds(tmp: Path, trajs, chunk: int = 20) -> dict[bool | str, float]:
    """Seconds spent writing `trajs` (one transaction each, synchronous=FULL as a run writes) into
    a store with the index (True) and one without (False), in alternating chunks so a busy moment
    hits both; "cpu" / "cpu without": this process's CPU seconds of each."""
    spent = {True: 0.0, False: 0.0, "cpu": 0.0, "cpu without": 0.0}
    with Store(tmp / "indexed") as indexed, Store(tmp / "plain") as plain:
        stores = {True: indexed, False: plain}
        for n, start in enumerate(range(0, len(trajs), chunk)):
            for with_index in (n % 2 == 0, n % 2 == 1):
                with index_off(not with_index):
                    t0, c0 = time.perf_counter(), time.process_time()
                    for t in trajs[start : start + chunk]:
                        stores[with_index].write(t)
                    spent[with_index] += time.perf_counter() - t0
                    spent["cpu" if with_index else "cpu without"] += time.process_time() - c0
    return spent


def wal_frames_per_write(tmp: Path, trajs) -> dict[bool, float]:
    """WAL frames (pages) each write commits, with the index (True) and without (False)."""
    frames = {}
    for with_index in (True, False):
        with index_off(not with_index), Store(tmp / f"wal-{with_index}") as store:
            store._conn().execute("PRAGMA wal_autocheckpoint = 0")  # keep every frame in the file
            wal = store.path.with_name(store.path.name + "-wal")
            before = wal.stat().st_size
            for t in trajs:
                store.write(t)
            page = store._conn().execute("PRAGMA page_size").fetchone()[0] + 24  # a frame: its header and a page
            frames[with_index] = (wal.stat().st_size - before) / page / len(trajs)
    return frames


def search_figures(tmp: Path, n: int, steps: int) -> None:
    with Store(tmp / "big", synchronous="NORMAL") as store:
        for start in range(0, n, 500):
            store.write_many(make_trajectory(i, steps=steps, hops=i % 4) for i in range(start, min(n, start + 500)))
        conn = store._conn()
        like = "SELECT id FROM trajectories WHERE lower(question) LIKE ? OR lower(final_answer) LIKE ?"
        for query in QUERIES:
            found = len(store.columns(("id",), search=query)["id"])
            wall, cpu = ms(lambda q=query: store.columns(("id",), search=q))
            scan_wall, scan_cpu = ms(lambda q=query: conn.execute(like, (f"%{q}%", f"%{q}%")).fetchall())
            name = f"search {query!r} ({found} of {n})"
            figure(f"{name} cpu", cpu, "ms", baseline=scan_cpu, target="<= 100 ms", ok=cpu <= 100)
            figure(f"{name} wall", wall, "ms", baseline=scan_wall)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=10_000)
    ap.add_argument("--writes", type=int, default=600)
    ap.add_argument("--steps", type=int, default=8)
    add_smoke_flag(ap)
    args = ap.parse_args()
    if args.smoke:
        args.n, args.writes, args.steps = 200, 20, 2
    tmp = Path(tempfile.mkdtemp(dir=os.environ.get("BENCH_DIR")))
    print(f"{args.n} trajectories x {args.steps} steps for search, {args.writes} for writes, in {tmp}")
    print("ratio: full-text search / substring scan of question and answer (LIKE) in the same store")
    search_figures(tmp, args.n, args.steps)

    trajs = [make_trajectory(i, steps=args.steps, hops=i % 4) for i in range(args.writes)]
    spent = write_seconds(tmp, trajs)
    with_index, without = len(trajs) / spent[True], len(trajs) / spent[False]
    figure("writes/s without the index (baseline)", without, "/s")
    figure("writes/s with the index", with_index, "/s", baseline=without)
    cost = spent[True] / spent[False] - 1
    figure("time the index adds to writes (wall)", cost * 100, "%", target="<= 10%", ok=cost <= 0.10)
    cpu_cost = spent["cpu"] / spent["cpu without"] - 1
    figure("CPU time the index adds to writes", cpu_cost * 100, "%", target="<= 10%", ok=cpu_cost <= 0.10)
    frames = wal_frames_per_write(tmp, trajs[:200])
    figure("WAL pages a write commits, without the index", frames[False], "pages")
    figure("WAL pages a write commits, with the index", frames[True], "pages", baseline=frames[False])


if __name__ == "__main__":
    main()

"""Store throughput against a plain JSONL append baseline, measured in the same run.

    .venv/bin/python bench/bench_store.py [--n 400] [--steps 8]

Prints: writes/s (one transaction per trajectory) for synchronous=FULL and NORMAL vs JSONL append
(flush only, and flush+fsync, the like-for-like durability); the zlib blob size vs raw JSON; and
the latency of a filtered query from a read-only Store while another process writes, vs filtering
the JSONL file the same way.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import zlib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "tests" / "store"))
from _util import add_smoke_flag, record  # noqa: E402
from store_helpers import make_trajectory  # noqa: E402

from workbench.store import Store  # noqa: E402


def jsonl_writes(path: Path, trajs, fsync: bool) -> float:
    t0 = time.perf_counter()
    with path.open("a") as f:
        for t in trajs:
            f.write(json.dumps(t.to_dict()) + "\n")
            f.flush()
            if fsync:
                os.fsync(f.fileno())
    return len(trajs) / (time.perf_counter() - t0)


def store_writes(run: Path, trajs, synchronous: str) -> float:
    with Store(run, synchronous=synchronous) as store:
        t0 = time.perf_counter()
        for t in trajs:
            store.write(t)
        return len(trajs) / (time.perf_counter() - t0)


def query_latency(fn, seconds: float) -> tuple[float, float]:
    """(median, p90) in ms."""
    samples = []
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        t0 = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - t0) * 1000)
    return statistics.median(samples), statistics.quantiles(samples + samples, n=10)[-1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=400)
    ap.add_argument("--steps", type=int, default=8)
    add_smoke_flag(ap)
    args = ap.parse_args()
    if args.smoke:
        args.n, args.steps = 20, 2
    trajs = [make_trajectory(i, steps=args.steps, hops=i % 4, reward=(i % 5) / 4) for i in range(args.n)]
    tmp = Path(tempfile.mkdtemp(dir=os.environ.get("BENCH_DIR")))
    print(f"{args.n} trajectories x {args.steps} steps, in {tmp}")

    raw = sum(len(json.dumps(t.to_dict(), separators=(",", ":"))) for t in trajs)
    packed = sum(len(zlib.compress(json.dumps(t.to_dict(), separators=(",", ":")).encode(), 6)) for t in trajs)
    print(
        f"blob size: raw JSON {raw / args.n / 1024:.1f} KiB, zlib-6 {packed / args.n / 1024:.1f} KiB "
        f"(ratio {raw / packed:.1f}x smaller)"
    )
    record("blob size, raw JSON", raw / args.n / 1024, "KiB")
    record("blob size, zlib-6", packed / args.n / 1024, "KiB", baseline=raw / args.n / 1024)

    base = jsonl_writes(tmp / "a.jsonl", trajs, fsync=False)
    base_sync = jsonl_writes(tmp / "b.jsonl", trajs, fsync=True)
    full = store_writes(tmp / "full", trajs, "FULL")
    normal = store_writes(tmp / "normal", trajs, "NORMAL")
    print(
        f"writes/s: jsonl {base:.0f}, jsonl+fsync {base_sync:.0f}, "
        f"store FULL {full:.0f} ({full / base_sync:.2f}x jsonl+fsync, {full / base:.2f}x jsonl), "
        f"store NORMAL {normal:.0f} ({normal / base:.2f}x jsonl)"
    )
    record("writes, jsonl", base, "writes/s")
    record("writes, jsonl+fsync", base_sync, "writes/s")
    record("writes, store FULL", full, "writes/s", baseline=base_sync)
    record("writes, store NORMAL", normal, "writes/s", baseline=base)

    # Read while another process writes a fresh run.
    run, jsonl = tmp / "live", tmp / "live.jsonl"
    Store(run).close()
    writer = subprocess.Popen(
        [
            sys.executable,
            "-c",
            (
                "import sys, json; sys.path[:0] = sys.argv[3:5]\n"
                "from store_helpers import make_trajectory\nfrom workbench.store import Store\n"
                "s = Store(sys.argv[1]); f = open(sys.argv[2], 'a')\n"
                "for i in range(10**6):\n"
                "    t = make_trajectory(i, steps=8, hops=i % 4, reward=(i % 5) / 4); s.write(t)\n"
                "    f.write(json.dumps(t.to_dict()) + '\\n'); f.flush()\n"
            ),
            str(run),
            str(jsonl),
            str(ROOT),
            str(ROOT / "tests" / "store"),
        ]
    )
    read_s = 0.3 if args.smoke else 3.0  # how long each read-while-write query is timed
    time.sleep(read_s)
    reader = Store.open_readonly(run)

    def jsonl_query():
        rows = [json.loads(line) for line in jsonl.read_text().splitlines() if line.endswith("}")]
        return [r["id"] for r in rows if r["role"] == "solver" and (r["rewards"].get("total") or 0) >= 0.5]

    q_store = query_latency(lambda: reader.query(role="solver", min_reward=0.5), read_s)
    q_get = query_latency(lambda: reader.get(reader.query(limit=1)["id"][0]), read_s)
    q_jsonl = query_latency(jsonl_query, read_s)
    writer.kill()
    writer.wait()
    print(
        f"read-while-write, {len(reader)} rows, median (p90) ms: store query {q_store[0]:.1f} "
        f"({q_store[1]:.1f}), query+get {q_get[0]:.1f} ({q_get[1]:.1f}); jsonl scan "
        f"{q_jsonl[0]:.1f} ({q_jsonl[1]:.1f}); store query {q_jsonl[0] / q_store[0]:.1f}x faster"
    )
    for label, (median, p90) in (("store query", q_store), ("store query+get", q_get), ("jsonl scan", q_jsonl)):
        record(
            f"read-while-write, {label}: median", median, "ms", baseline=q_store[0] if label != "store query" else None
        )
        record(f"read-while-write, {label}: p90", p90, "ms")
    reader.close()


if __name__ == "__main__":
    main()

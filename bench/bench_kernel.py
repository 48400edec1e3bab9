"""Kernel benchmarks: sandboxed kernel vs a bare jupyter_client ipykernel over ipc, same run.

    .venv/bin/python bench/bench_kernel.py [--quick]

Figures: cold start of an exec'd kernel (ratio, target ≤ 1.2), execute("1+1") round trip p50
(ratio, target ≤ 1.1), warm-pool acquire p50 (target ≤ 10 ms), idle RSS of a warm kernel (all its
processes), throughput of short executions through pools of 1, 2 and 4 kernels (ratio to the pool
of 1); then zygote kernels: ready-to-execute time (first `1+1` answered) of zygote vs exec starts,
p50 and p95, interleaved, with the line `zygote start / exec start: X` for scripts (target ≤ 0.15,
≤ 50 ms p50 on an idle machine), idle memory (PSS) of zygote vs exec kernels, and 64 zygote
kernels started at once, all answering (≤ 1 s).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _util import add_smoke_flag, figure, p50, smoke_skip
from jupyter_client.manager import AsyncKernelManager

from workbench.kernel import AsyncKernel, AsyncKernelPool
from workbench.kernel.procs import process_tree, sandbox_rss_mb
from workbench.kernel.zygote import zygote_unsupported
from workbench.sandbox import check_sandbox

# The sandboxed kernel runs ipykernel with these flags; the fair baseline does too.
SAME_FLAGS = ["--HistoryManager.enabled=False", "--quiet"]


async def bare_kernel(tmp: str, flags: list[str] = SAME_FLAGS):
    """The baseline: jupyter_client starting a plain ipykernel over ipc."""
    km = AsyncKernelManager(transport="ipc")
    km.ip = f"{tmp}/k{time.monotonic_ns()}"
    km.connection_file = f"{km.ip}.json"
    t = time.perf_counter()
    await km.start_kernel(extra_arguments=flags)
    kc = km.client()
    kc.start_channels()
    await kc.wait_for_ready(timeout=60)
    return km, kc, time.perf_counter() - t


async def bare_roundtrip(kc) -> float:
    t = time.perf_counter()
    msg_id = kc.execute("1+1")
    while True:
        msg = await kc.get_iopub_msg(timeout=10)
        if (
            msg["parent_header"].get("msg_id") == msg_id
            and msg["msg_type"] == "status"
            and msg["content"]["execution_state"] == "idle"
        ):
            break
    while (await kc.get_shell_msg(timeout=10))["parent_header"].get("msg_id") != msg_id:
        pass
    return time.perf_counter() - t


async def paired_roundtrips(runs: list, n: int) -> list[float]:
    """p50 of each runner, alternating calls one by one so both see the same machine load."""
    for run in runs:
        for _ in range(20):
            await run()
    times: list[list[float]] = [[] for _ in runs]
    for _ in range(n):
        for i, run in enumerate(runs):
            times[i].append(await run())
    return [statistics.median(t) for t in times]


async def pool_throughput(size: int, rollouts: int, steps: int) -> float:
    async with AsyncKernelPool(size) as pool:

        async def rollout() -> None:
            async with pool.acquire() as k:
                for _ in range(steps):
                    await k.execute("1+1")

        t = time.perf_counter()
        await asyncio.gather(*(rollout() for _ in range(rollouts)))
        return rollouts * steps / (time.perf_counter() - t)


def p95(xs: list[float]) -> float:
    return sorted(xs)[min(len(xs) - 1, round(0.95 * (len(xs) - 1)))]


async def ready_to_execute(start: str) -> float:
    """Seconds from asking for a kernel to its first `1+1` answered (then it is closed, untimed)."""
    t = time.perf_counter()
    k = await AsyncKernel(start=start).start()
    await k.execute("1+1")
    dt = time.perf_counter() - t
    await k.close()
    return dt


def sandbox_pss_mb(pid: int | None) -> float:
    """Proportional memory (MiB) of a sandbox's processes: a page shared by n processes counts 1/n."""
    total_kb = 0
    for p in process_tree(pid):
        try:
            with open(f"/proc/{p}/smaps_rollup") as f:
                total_kb += sum(int(line.split()[1]) for line in f if line.startswith("Pss:"))
        except OSError:
            continue
    return total_kb / 1024


async def zygote_figures(smoke: bool, quick: bool) -> None:
    reason = zygote_unsupported()
    if reason is not None:
        if smoke:
            smoke_skip("zygote figures", reason)
        else:
            print(f"zygote figures skipped: {reason}", flush=True)
        return
    await ready_to_execute("zygote")  # the zygote itself starts once per profile: not part of a kernel's start
    n = 2 if smoke else 10 if quick else 30
    starts: dict[str, list[float]] = {"zygote": [], "exec": []}
    for _ in range(n):  # interleaved, so load changes hit both alike
        for start in starts:
            starts[start].append(await ready_to_execute(start))
    z, e = starts["zygote"], starts["exec"]
    for start, xs in starts.items():
        figure(f"ready to execute, {start}: p50", p50(xs) * 1e3, "ms")
        figure(f"ready to execute, {start}: p95", p95(xs) * 1e3, "ms")
    figure("ready to execute, zygote p50", p50(z) * 1e3, "ms", target="<= 50 ms idle", ok=p50(z) <= 0.050)
    ratio = p50(z) / p50(e)
    figure("ready to execute p50: zygote / exec", ratio, "x", target="<= 0.15", ok=ratio <= 0.15)
    print(f"zygote start / exec start: {ratio:.3f}", flush=True)

    pss: dict[str, float] = {}
    for start in ("zygote", "exec"):  # proportional set size: pages shared with the zygote count once
        group = await asyncio.gather(*(AsyncKernel(start=start).start() for _ in range(2 if smoke else 4)))
        await asyncio.gather(*(k.execute("1+1") for k in group))
        pss[start] = statistics.mean(sandbox_pss_mb(k.pid) for k in group)
        await asyncio.gather(*(k.close() for k in group))
    figure("idle kernel PSS, exec (baseline)", pss["exec"], "MiB")
    figure("idle kernel PSS, zygote", pss["zygote"], "MiB", baseline=pss["exec"])

    many = 4 if smoke else 64
    t = time.perf_counter()
    kernels = await asyncio.gather(*(AsyncKernel(start="zygote").start() for _ in range(many)))
    await asyncio.gather(*(k.execute("1+1") for k in kernels))
    all_ready = time.perf_counter() - t
    await asyncio.gather(*(k.close() for k in kernels))
    figure(f"{many} zygote kernels at once, all answered", all_ready, "s", target="<= 1 s", ok=all_ready <= 1.0)


async def main(quick: bool, smoke: bool = False) -> None:
    check_sandbox()
    reps, n_rt = (1, 10) if smoke else (3, 200) if quick else (5, 500)
    tmp = tempfile.mkdtemp(prefix="wb-bench-")
    bare_starts, box_starts, bare_rt, box_rt, dflt_rt = [], [], [], [], []
    for _ in range(reps):  # interleave so load changes hit both sides alike
        km0, kc0, _ = await bare_kernel(tmp, [])
        km, kc, dt = await bare_kernel(tmp)
        bare_starts.append(dt)
        t = time.perf_counter()
        k = await AsyncKernel(start="exec").start()
        box_starts.append(time.perf_counter() - t)

        async def box_run(k=k) -> float:
            t = time.perf_counter()
            await k.execute("1+1")
            return time.perf_counter() - t

        d, b, x = await paired_roundtrips(
            [lambda c=kc0: bare_roundtrip(c), lambda c=kc: bare_roundtrip(c), box_run], n_rt // reps
        )
        dflt_rt.append(d), bare_rt.append(b), box_rt.append(x)
        for m, c in ((km0, kc0), (km, kc)):
            c.stop_channels()
            await m.shutdown_kernel(now=True)
        await k.close()
    base_start, base_rt = statistics.median(bare_starts), statistics.median(bare_rt)
    box_start, box_rtt = statistics.median(box_starts), statistics.median(box_rt)
    figure("cold start: bare ipykernel (baseline)", base_start * 1e3, "ms")
    figure(
        "cold start: sandboxed kernel (exec)",
        box_start * 1e3,
        "ms",
        baseline=base_start * 1e3,
        target="ratio <= 1.2",
        ok=box_start / base_start <= 1.2,
    )
    figure("execute('1+1') p50: bare, ipykernel defaults", statistics.median(dflt_rt) * 1e3, "ms")
    figure("execute('1+1') p50: bare over ipc (baseline)", base_rt * 1e3, "ms")
    figure(
        "execute('1+1') p50: sandboxed",
        box_rtt * 1e3,
        "ms",
        baseline=base_rt * 1e3,
        target="ratio <= 1.1",
        ok=box_rtt / base_rt <= 1.1,
    )

    async with AsyncKernelPool(2) as pool:
        waits = []
        for _ in range(2 if smoke else 10 if quick else 20):
            await pool.wait_warm()
            t = time.perf_counter()
            async with pool.acquire() as k:
                waits.append(time.perf_counter() - t)
        acq = statistics.median(waits)
        figure("warm pool acquire() p50", acq * 1e3, "ms", target="<= 10 ms", ok=acq <= 0.010)
        await pool.wait_warm()
        async with pool.acquire() as k:
            figure("idle warm kernel RSS (all processes)", sandbox_rss_mb(k.pid), "MiB")

    rollouts, steps = (2, 2) if smoke else (8, 10) if quick else (16, 20)
    base = None
    for size in (1, 2) if smoke else (1, 2, 4):
        rate = await pool_throughput(size, rollouts, steps)
        base = base or rate
        figure(f"throughput, pool of {size} ({rollouts} rollouts x {steps} execs)", rate, "exec/s", baseline=base)
    await zygote_figures(smoke, quick)


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer repetitions")
    add_smoke_flag(ap)
    args = ap.parse_args()
    asyncio.run(main(args.quick, args.smoke))

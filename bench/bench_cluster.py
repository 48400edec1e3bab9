"""Ray kernel workers against the local executor, measured in one run.

    .venv/bin/python bench/bench_cluster.py [--episodes 16] [--kernels 2] [--calls 200] [--rounds 3]

- episodes/s of the scripted world solver: Ray (1 worker x P kernels), policy in the driver
  (`mode="env"`) and whole episodes on the worker (`mode="episode"`), over local (P); the three
  run in turn, `--rounds` times, and each figure is its median                         target >= 0.9
- added latency per step in driver-policy mode (a remote `step("1+1")` minus the kernel round trip
  of execute("1+1") timed inside the worker, the process that drives that kernel), over that
  round trip                                                                           target <= 0.2
- actor call p50 (an empty method), over the same round trip                           target <= 0.1
  All are interleaved (each round: local kernel, remote step, in-worker kernel, actor call) and
  medians; the driver's own kernel round trip is shown beside them.
- Ray's fixed costs (import, local cluster start, first worker warm, memory of Ray's processes)
  beside one local pool warm-up (information only).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _util import add_smoke_flag, figure

from workbench.agent.config import AgentConfig
from workbench.agent.executor import gather_jobs, make_jobs
from workbench.agent.local import LocalExecutor
from workbench.kernel import AsyncKernelPool
from workbench.kernel.procs import sandbox_rss_mb
from workbench.kernel.sync import run_sync
from workbench.resolve import load_search_tool
from workbench.worlds import make_world
from workbench.worlds.scripted.solver import world_solver

CONFIG = AgentConfig(max_steps=6, max_context_tokens=16384)


def own_rss_mb() -> float:
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:")) / 1024


async def pool_warm_s(kernels: int) -> float:
    """Seconds to warm a local pool of `kernels`."""
    t = time.perf_counter()
    async with AsyncKernelPool(kernels, startup_code="import workbench.runtime"):
        return time.perf_counter() - t


def episodes_per_s(executor, jobs, policy) -> float:
    async def go():
        t = time.perf_counter()
        trajs = await gather_jobs(executor, jobs, policy)
        assert all(tr.termination == "submitted" for tr in trajs), [(tr.termination, tr.error) for tr in trajs]
        return len(trajs) / (time.perf_counter() - t)

    return run_sync(go())


async def interleaved_p50(calls: int, **steps) -> dict[str, float]:
    """p50 of each step, called in turn in the same loop (so drifting machine load hits all alike).
    A step that returns a list of floats reports its own time (measured where it ran)."""
    for step in steps.values():
        await step()
    times: dict[str, list[float]] = {name: [] for name in steps}
    for _ in range(calls):
        for name, step in steps.items():
            t = time.perf_counter()
            got = await step()
            times[name] += got if isinstance(got, list) else [time.perf_counter() - t]
    return {name: statistics.median(ts) for name, ts in times.items()}


async def step_latencies(handle, job, calls: int) -> dict[str, float]:
    """Kernel round trip in process and in the worker, the same step through the worker, and an
    empty actor call."""
    async with AsyncKernelPool(1, startup_code="import workbench.runtime") as pool:
        async with pool.acquire() as kernel:
            return await interleaved_p50(
                calls,
                kernel=lambda: kernel.execute("1+1"),
                remote=lambda: handle.step.remote(job.id, "1+1", 30.0),
                worker_kernel=lambda: handle.kernel_round_trip.remote(job.id, "1+1", 1),
                actor=lambda: handle.ping.remote(),
            )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--episodes", type=int, default=16)
    ap.add_argument("--kernels", type=int, default=2)
    ap.add_argument("--calls", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=3, help="runs of each executor, in turn")
    add_smoke_flag(ap)
    args = ap.parse_args()
    if args.smoke:
        args.episodes, args.kernels, args.calls, args.rounds = 2, 1, 10, 1
    P = args.kernels

    world = make_world(seed=0, size="small")
    corpus = Path(tempfile.mkdtemp(prefix="bench-cluster-")) / "corpus.jsonl"
    corpus.write_text("".join(json.dumps(row) + "\n" for row in world.corpus()))
    tasks = (world.tasks("test") * 4)[: args.episodes]
    jobs = lambda: make_jobs(tasks, CONFIG)  # noqa: E731  fresh ids per run

    pool_warm = run_sync(pool_warm_s(P))
    t = time.perf_counter()
    import ray

    import_s = time.perf_counter() - t
    from workbench.cluster import RayExecutor, RayWorkers, ToolsSpec, connect

    t = time.perf_counter()
    connect("local", num_cpus=2, include_dashboard=False)  # a cluster of its own, never one left running
    init_s = time.perf_counter() - t
    ray_rss = sandbox_rss_mb(os.getpid()) - own_rss_mb()  # Ray's daemons and idle workers: our descendants

    spec = ToolsSpec("workbench.resolve:load_search_tool", corpus=str(corpus))
    t = time.perf_counter()
    workers = RayWorkers.start({"default": spec}, workers=1, kernels_per_worker=P, strategy=None)
    first_warm = time.perf_counter() - t
    local = LocalExecutor(load_search_tool(corpus=corpus), concurrency=P)
    runs = {
        "local": (local, world_solver()),
        "env": (RayExecutor(None, mode="env", workers=workers), world_solver()),
        "episode": (RayExecutor(None, mode="episode", workers=workers), "scripted:world"),
    }
    rates: dict[str, list[float]] = {name: [] for name in runs}
    for executor, policy in runs.values():
        episodes_per_s(executor, jobs()[:P], policy)  # warm
    for _ in range(args.rounds):  # in turn, so drifting machine load hits all three alike
        for name, (executor, policy) in runs.items():
            rates[name].append(episodes_per_s(executor, jobs(), policy))
    local.close()
    handle = workers.workers[0].handle
    [job] = make_jobs(tasks[:1], CONFIG)
    ray.get(handle.open.remote(job))
    lat = run_sync(step_latencies(handle, job, args.calls))
    ray.get(handle.close.remote(job.id))
    workers.shutdown()
    rate = {name: statistics.median(xs) for name, xs in rates.items()}
    base, rtt = rate["local"], lat["worker_kernel"]

    print(f"bench_cluster: {args.episodes} episodes, P={P} kernels, scripted world solver, ray {ray.__version__}")
    figure("local episodes/s (P kernels)", base, "ep/s")
    figure(
        "ray env mode episodes/s (1 worker x P)",
        rate["env"],
        "ep/s",
        baseline=base,
        target=">= 0.9",
        ok=rate["env"] / base >= 0.9,
    )
    figure(
        "ray episode mode episodes/s (1 worker x P)",
        rate["episode"],
        "ep/s",
        baseline=base,
        target=">= 0.9",
        ok=rate["episode"] / base >= 0.9,
    )
    for name, xs in rates.items():
        print(f"    {name} runs: {', '.join(f'{x:.3f}' for x in xs)} ep/s (median above)")
    figure("kernel execute('1+1') round trip p50, in the driver", lat["kernel"] * 1e3, "ms")
    figure("kernel execute('1+1') round trip p50, in the worker", rtt * 1e3, "ms")
    figure("env mode step p50 (remote step('1+1'))", lat["remote"] * 1e3, "ms")
    added = lat["remote"] - rtt
    figure(
        "env mode added latency per step", added * 1e3, "ms", baseline=rtt * 1e3, target="<= 0.2", ok=added / rtt <= 0.2
    )
    figure(
        "actor call p50", lat["actor"] * 1e3, "ms", baseline=rtt * 1e3, target="<= 0.1", ok=lat["actor"] / rtt <= 0.1
    )
    figure(
        "  (information) remote step over a step in the driver", lat["remote"] * 1e3, "ms", baseline=lat["kernel"] * 1e3
    )
    print("fixed costs (information):")
    figure("  local pool warm-up (P kernels)", pool_warm, "s")
    figure("  import ray", import_s, "s", baseline=pool_warm)
    figure("  local cluster start (ray.init, 2 CPUs)", init_s, "s", baseline=pool_warm)
    figure("  first worker placed and warm (P kernels)", first_warm, "s", baseline=pool_warm)
    figure("  memory of Ray's processes", ray_rss, "MiB")
    ray.shutdown()


if __name__ == "__main__":
    main()

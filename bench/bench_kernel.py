"""Kernel benchmarks: sandboxed kernel vs a bare jupyter_client ipykernel over ipc, same run.

    .venv/bin/python bench/bench_kernel.py [--quick] [--only-zygote | --only-fork]

Figures: cold start of an exec'd kernel (ratio, target ≤ 1.2), execute("1+1") round trip p50 (ratio,
target ≤ 1.1), warm-pool acquire p50 (target ≤ 10 ms), idle RSS of a warm kernel (all its
processes), throughput of short executions through pools of 1, 2 and 4 kernels (ratio to the pool of
1); then zygote kernels: ready-to-execute time (first `1+1` answered) of zygote vs exec starts, p50
and p95, interleaved, with the line `zygote start / exec start: X` for scripts (target ≤ 0.15, ≤ 50
ms p50 on an idle machine), the CPU time and minor page faults of a kernel's processes up to that
answer (less bound to the machine's load than wall time; the load average is printed), idle memory
(PSS) of zygote vs exec kernels, and 64 zygote kernels started at once, all answering (≤ 1 s; mean
of four rounds, in balanced order with the same starts in rollout dirs in the temp dir where
`kernel_dir_base()` chose another place: the ratio is that choice's gain). Beside the zygote figures,
in the same rounds, runs their floor (`kernel_floor.py`): the same ipykernel forked from the same
prepared app with no sandbox at all, so `zygote / floor` is what the sandbox adds and the floor is
what ipykernel's own start costs on this machine. Then `kernel.fork`: fork(8)
of a kernel holding a 100 MiB numpy array, each child's time to ready (p50, p95; ratio to starting a
kernel and rebuilding the array in it) and the children's PSS growth over 8 copies (copy-on-write:
far below 1), and a GRPO-style batch of 16 scripted NB-Agent episodes (4 groups of 4) with
`fork_groups=True` vs False (wall ratio), without and with a task setup that computes something.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _util import add_smoke_flag, figure, p50, record, smoke_skip
from jupyter_client.manager import AsyncKernelManager
from kernel_floor import UnsandboxedForker

from workbench.agent import AgentConfig, LocalExecutor, make_jobs
from workbench.agent.executor import gather_jobs
from workbench.kernel import AsyncKernel, AsyncKernelPool
from workbench.kernel.async_kernel import StartMethod
from workbench.kernel.fork import snapshot
from workbench.kernel.procs import process_tree, sandbox_rss_mb
from workbench.kernel.zygote import zygote_unsupported
from workbench.policies import ScriptedPolicy
from workbench.sandbox import check_sandbox, kernel_dir_base
from workbench.sandbox.kernel_dirs import filesystem
from workbench.tools import ToolRegistry
from workbench.trajectory import Task

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


async def ready_to_execute(start: StartMethod) -> tuple[float, float, int]:
    """Seconds from asking for a kernel to its first `1+1` answered, and the CPU ms and minor page
    faults its processes had spent by then (less load-bound than wall time); then it is closed."""
    t = time.perf_counter()
    k = await AsyncKernel(start=start).start()
    await k.execute("1+1")
    dt = time.perf_counter() - t
    cpu_ms, faults = sandbox_cpu(k.pid)
    await k.close()
    return dt, cpu_ms, faults


def sandbox_cpu(pid: int | None) -> tuple[float, int]:
    """CPU time (ms, all threads, from schedstat) and minor page faults of a sandbox's live processes."""
    cpu_ns = faults = 0
    for p in process_tree(pid):
        try:
            for task in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{task}/schedstat") as f:
                    cpu_ns += int(f.read().split()[0])
            with open(f"/proc/{p}/stat", "rb") as f:
                stat = f.read()
            faults += int(stat[stat.rindex(b")") + 2 :].split()[7])
        except OSError:
            continue
    return cpu_ns / 1e6, faults


def load_average() -> str:
    with open("/proc/loadavg") as f:
        return f.read().split()[0]


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


def favordynmods() -> str:
    """Whether the cgroup2 hierarchy is mounted with favordynmods (`on`, `off`, or `no cgroup2`)."""
    with open("/proc/mounts") as f:
        opts = [line.split()[3] for line in f if line.split()[2] == "cgroup2"]
    return "no cgroup2" if not opts else "on" if any("favordynmods" in o.split(",") for o in opts) else "off"


def cgroup_move_ms(n: int) -> float | None:
    """p50 wall time (ms) of moving a process into a fresh kernel cgroup (every controller dir), as a
    zygote child's first step does; None where kernels get no cgroup."""
    from workbench.sandbox.cgroups import Cgroup
    from workbench.sandbox.profile import Limits

    times = []
    for i in range(n):
        cg = Cgroup.create(f"bench-move-{i}", Limits())
        if cg is None:
            return None
        pid = os.fork()
        if pid == 0:
            time.sleep(5)
            os._exit(0)
        t = time.perf_counter()
        for d in cg.dirs:
            (d / "cgroup.procs").write_text(str(pid))
        times.append(time.perf_counter() - t)
        os.kill(pid, 9)
        os.waitpid(pid, 0)
        cg.remove()
    return p50(times) * 1e3


async def zygote_figures(smoke: bool, quick: bool) -> None:
    reason = zygote_unsupported()
    if reason is not None:
        if smoke:
            smoke_skip("zygote figures", reason)
        else:
            print(f"zygote figures skipped: {reason}", flush=True)
        return
    await ready_to_execute("zygote")  # the zygote itself starts once per profile: not part of a kernel's start
    print(f"load average before the zygote figures: {load_average()}", flush=True)
    async with UnsandboxedForker() as floor:
        await floor.ready()  # the forker's first child pays for what every later one finds done
        await single_starts(floor, 2 if smoke else 10 if quick else 30)
        move = cgroup_move_ms(3 if smoke else 20)
        if move is not None:  # an RCU grace period on cgroup v1 unless cgroup2 has favordynmods (README)
            figure(f"moving a process into its cgroup (favordynmods {favordynmods()}): p50", move, "ms")
        await memory_per_kernel(smoke)
        await many_at_once(floor, 4 if smoke else 64, smoke)
    print(f"load average after the zygote figures: {load_average()}", flush=True)


async def single_starts(floor: UnsandboxedForker, n: int) -> None:
    """Ready-to-execute time of zygote and exec starts, and of the unsandboxed floor, interleaved."""
    samples: dict[StartMethod, list[tuple[float, float, int]]] = {"zygote": [], "exec": []}
    floors: list[float] = []
    for _ in range(n):  # interleaved, so load changes hit all alike
        for start in samples:
            samples[start].append(await ready_to_execute(start))
        floors.append(await floor.ready())
    starts = {start: [wall for wall, _, _ in xs] for start, xs in samples.items()}
    z, e = starts["zygote"], starts["exec"]
    for start, xs in starts.items():
        figure(f"ready to execute, {start}: p50", p50(xs) * 1e3, "ms")
        figure(f"ready to execute, {start}: p95", p95(xs) * 1e3, "ms")
    figure("ready to execute, no sandbox (floor): p50", p50(floors) * 1e3, "ms")
    figure("ready to execute, no sandbox (floor): p95", p95(floors) * 1e3, "ms")
    cpu = {start: p50([c for _, c, _ in xs]) for start, xs in samples.items()}
    faults = {start: p50([f for _, _, f in xs]) for start, xs in samples.items()}
    figure("kernel's CPU to first 1+1, exec: p50", cpu["exec"], "ms")
    figure("kernel's CPU to first 1+1, zygote: p50", cpu["zygote"], "ms", baseline=cpu["exec"])
    figure("minor faults to first 1+1, zygote: p50", faults["zygote"], "", baseline=faults["exec"])
    figure("ready to execute p50: zygote / floor", p50(z) / p50(floors), "x")
    figure("ready to execute, zygote p50", p50(z) * 1e3, "ms", target="<= 50 ms idle", ok=p50(z) <= 0.050)
    ratio = p50(z) / p50(e)
    figure("ready to execute p50: zygote / exec", ratio, "x", target="<= 0.15", ok=ratio <= 0.15)
    print(f"zygote start / exec start: {ratio:.3f}", flush=True)


async def memory_per_kernel(smoke: bool) -> None:
    pss: dict[str, float] = {}
    methods: tuple[StartMethod, ...] = ("zygote", "exec")
    for start in methods:  # proportional set size: pages shared with the zygote count once
        group = await asyncio.gather(*(AsyncKernel(start=start).start() for _ in range(2 if smoke else 4)))
        await asyncio.gather(*(k.execute("1+1") for k in group))
        pss[start] = statistics.mean(sandbox_pss_mb(k.pid) for k in group)
        await asyncio.gather(*(k.close() for k in group))
    figure("idle kernel PSS, exec (baseline)", pss["exec"], "MiB")
    figure("idle kernel PSS, zygote", pss["zygote"], "MiB", baseline=pss["exec"])


async def many_at_once(floor: UnsandboxedForker, many: int, smoke: bool) -> None:
    """`many` zygote kernels started at once (rollout dirs where `kernel_dir_base()` puts them, and in
    the temp dir where that differs), and as many unsandboxed forks: means over balanced rounds."""
    temp = Path(tempfile.gettempdir())
    print(
        f"rollout dirs in {kernel_dir_base()} ({filesystem_of(kernel_dir_base())}); "
        f"temp dir {temp} ({filesystem_of(temp)})"
    )
    on_disk = temp / f"workbench-bench-{os.getpid()}"
    rounds: dict[str, Callable[[], Awaitable[float]]] = {
        "default": lambda: all_at_once(many),
        "floor": lambda: floor.all_at_once(many),
    }
    if kernel_dir_base() != temp:  # the same starts with every rollout dir in the temp dir
        rounds["temp"] = lambda: all_at_once(many, on_disk)
    took: dict[str, list[float]] = {name: [] for name in rounds}
    order = list(rounds) if smoke else [*rounds, *reversed(rounds), *reversed(rounds), *rounds]
    for name in order:  # balanced: a round runs slower right after another, and the load drifts
        await asyncio.sleep(0 if smoke else 1)
        took[name].append(await rounds[name]())
    all_ready, bare = statistics.mean(took["default"]), statistics.mean(took["floor"])
    figure(f"{many} forked ipykernels at once, no sandbox (floor)", bare, "s")
    figure(f"{many} zygote kernels at once, all answered", all_ready, "s", target="<= 1 s", ok=all_ready <= 1.0)
    figure(f"{many} at once: zygote / floor", all_ready / bare, "x")
    if "temp" in took:
        shutil.rmtree(on_disk, ignore_errors=True)  # a root of one's own is one's own to remove
        on_temp = statistics.mean(took["temp"])
        figure(f"{many} at once, rollout dirs in the temp dir (baseline)", on_temp, "s")
        figure(f"{many} at once, rollout dirs in {kernel_dir_base()}", all_ready, "s", baseline=on_temp)


async def all_at_once(n: int, root: Path | None = None) -> float:
    """Seconds from asking for n zygote kernels at once to all of them answering `1+1`."""
    t = time.perf_counter()
    kernels = await asyncio.gather(*(AsyncKernel(start="zygote", root=root).start() for _ in range(n)))
    await asyncio.gather(*(k.execute("1+1") for k in kernels))
    took = time.perf_counter() - t
    await asyncio.gather(*(k.close() for k in kernels))
    return took


def filesystem_of(path: Path) -> str:
    with open("/proc/self/mountinfo") as f:
        return filesystem(path, f.read())


async def forked_children(parent: AsyncKernel, n: int) -> tuple[list[AsyncKernel], list[float], list[float]]:
    """`parent.fork(n)` step by step (the same calls: the children start while the parent saves), to
    time each child's ready moment (from the fork's start) and read its PSS before the state arrives."""
    t = time.perf_counter()
    saving = asyncio.ensure_future(snapshot(parent))
    children = [parent.sibling() for _ in range(n)]
    ready: list[float] = []
    before: list[float] = []

    async def one(child: AsyncKernel) -> None:
        await child.start()
        await child.execute("import numpy")  # so that the PSS growth is the array's alone
        before.append(sandbox_pss_mb(child.pid))
        await (await asyncio.shield(saving)).restore(child)
        ready.append(time.perf_counter() - t)

    await asyncio.gather(*(one(c) for c in children))
    saving.result().discard()
    return children, ready, before


async def fork_memory_and_time(smoke: bool, quick: bool) -> None:
    n, mb = (2, 4) if smoke else (8, 100)
    setup = f"import numpy as np\nbig = np.ones({mb} << 17)"  # 8-byte floats: mb MiB
    parent = await AsyncKernel(startup_code="import workbench.runtime").start()
    await parent.execute(setup)
    fork_ready, plain_ready = [], []
    for _ in range(1 if smoke or quick else 3):
        children, ready, before = await forked_children(parent, n)
        fork_ready += ready
        await asyncio.gather(*(c.execute("float(big.sum())") for c in children))  # every page read
        growth = sum(sandbox_pss_mb(c.pid) - b for c, b in zip(children, before, strict=True))
        await asyncio.gather(*(c.close() for c in children))
        t = time.perf_counter()  # the baseline: n fresh kernels, each building the array itself

        async def plain(t: float = t) -> None:
            k = await AsyncKernel(startup_code="import workbench.runtime").start()
            await k.execute(setup)
            plain_ready.append(time.perf_counter() - t)
            await k.close()

        await asyncio.gather(*(plain() for _ in range(n)))
    await parent.close()
    figure(f"{n} kernels + a {mb} MiB array built in each: p50", p50(plain_ready) * 1e3, "ms")
    figure(
        f"fork({n}) of a {mb} MiB array, child ready: p50", p50(fork_ready) * 1e3, "ms", baseline=p50(plain_ready) * 1e3
    )
    figure(
        f"fork({n}) of a {mb} MiB array, child ready: p95", p95(fork_ready) * 1e3, "ms", baseline=p95(plain_ready) * 1e3
    )
    ratio = growth / (n * mb)
    figure(f"fork({n}) children's PSS growth / ({n} x {mb} MiB)", ratio, "x", target="far below 1", ok=ratio < 0.5)


GROUP_TURNS = [
    "<think>look</think>\n<code>\nprint(task[:12], sorted(globals())[:3])\n</code>",
    "<think>done</think>\n<code>\nsubmit_final_answer('ok')\n</code>",
]
HEAVY_SETUP = "import numpy as np\ndata = np.random.default_rng(0).standard_normal((1600, 1600))\ngram = data @ data.T"


async def grpo_batch_walls(smoke: bool, quick: bool) -> None:
    groups, size = (2, 2) if smoke else (4, 4)
    tasks = [Task(id=f"t{g}", question=f"question {g}?") for g in range(groups) for _ in range(size)]
    policy = ScriptedPolicy.from_turns(GROUP_TURNS)
    async with LocalExecutor(ToolRegistry([]), concurrency=4) as executor:
        await gather_jobs(executor, make_jobs(tasks[:1], AgentConfig(max_steps=3)), policy)  # the pool warms up
        for setup, label in ((None, "no task_setup: a control, nothing forks"), (HEAVY_SETUP, "a 1600^2 matmul setup")):
            walls: dict[bool, list[float]] = {False: [], True: []}
            for _ in range(1 if smoke or quick else 2):
                for fork_groups in (False, True):  # interleaved: load changes hit both alike
                    config = AgentConfig(max_steps=3, seed=0, task_setup=setup, fork_groups=fork_groups)
                    t = time.perf_counter()
                    trajs = await gather_jobs(executor, make_jobs(tasks, config), policy)
                    walls[fork_groups].append(time.perf_counter() - t)
                    assert all(tr.termination == "submitted" for tr in trajs), [tr.error for tr in trajs]
            name = f"{len(tasks)} episodes ({groups} groups of {size}), {label}"
            figure(f"{name}: wall, setup in every episode", p50(walls[False]), "s")
            figure(f"{name}: wall, fork_groups", p50(walls[True]), "s", baseline=p50(walls[False]))
            print(f"fork_groups / plain wall ({label}): {p50(walls[True]) / p50(walls[False]):.3f}", flush=True)
            record(f"fork_groups / plain wall ({label})", p50(walls[True]) / p50(walls[False]), "x")


async def fork_figures(smoke: bool, quick: bool) -> None:
    reason = zygote_unsupported()
    if reason is not None:
        if smoke:
            smoke_skip("fork figures", reason)
        else:
            print(f"fork figures skipped: {reason}", flush=True)
        return
    print(f"load average before the fork figures: {load_average()}", flush=True)
    await fork_memory_and_time(smoke, quick)
    await grpo_batch_walls(smoke, quick)


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
        dflt_rt.append(d)
        bare_rt.append(b)
        box_rt.append(x)
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
    await fork_figures(smoke, quick)


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer repetitions")
    ap.add_argument("--only-fork", action="store_true", help="only the kernel.fork figures")
    ap.add_argument("--only-zygote", action="store_true", help="only the zygote start figures")
    add_smoke_flag(ap)
    args = ap.parse_args()
    if args.only_fork:
        asyncio.run(fork_figures(args.smoke, args.quick))
    elif args.only_zygote:
        asyncio.run(zygote_figures(args.smoke, args.quick))
    else:
        asyncio.run(main(args.quick, args.smoke))

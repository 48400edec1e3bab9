"""NB-Agent throughput and host-side overhead, with the scripted world solver.

    .venv/bin/python bench/bench_agent.py [--episodes 32]

- Episodes per second at concurrency 1, 2, 4, 8 (each episode: a fresh sandboxed kernel from the
  warm pool, the setup cell, 2-4 Think-Code-Observe steps with search through the gateway).
- Host-side overhead per step: the loop's wall time minus generation and the kernel's execute
  time, divided by steps, as a ratio to the kernel round trip of execute("1+1") measured in the
  same run (target <= 0.2).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _util import add_smoke_flag, figure

from workbench.agent import AgentConfig, NBAgent
from workbench.agent.episode import run_episode
from workbench.agent.episode_sandbox import LocalEpisodeSandbox
from workbench.kernel import AsyncKernelPool
from workbench.resolve import search_registry
from workbench.runtime import notepad_api_doc
from workbench.search import BM25Retriever, Corpus
from workbench.tools import ToolGateway, setup_code
from workbench.worlds import make_world
from workbench.worlds.scripted.solver import world_solver

CONFIG = AgentConfig(max_steps=6, max_context_tokens=16384)


async def kernel_round_trip(n: int = 200) -> float:
    async with AsyncKernelPool(1, startup_code="import workbench.runtime") as pool:
        async with pool.acquire() as kernel:
            for _ in range(20):
                await kernel.execute("1+1")
            times = []
            for _ in range(n):
                t = time.perf_counter()
                await kernel.execute("1+1")
                times.append(time.perf_counter() - t)
    return statistics.median(times)


async def overhead_per_step(tasks, tools) -> tuple[float, int]:
    """Run episodes one at a time in one kernel each; return median host overhead per step."""
    policy = world_solver()
    per_step = []
    steps = 0
    async with AsyncKernelPool(2, startup_code="import workbench.runtime") as pool:
        for task in tasks:
            async with pool.acquire() as kernel:
                async with ToolGateway(tools, kernel.rollout_dir / "run" / "gateway.sock") as gw:
                    await kernel.execute(setup_code(tools, token=gw.token), silent=True)
                    env = LocalEpisodeSandbox(kernel, gw, tools.prompt_text(), notepad_api_doc())
                    t = time.perf_counter()
                    traj = await run_episode(task, policy, env, CONFIG)
                    wall = time.perf_counter() - t
            inside = sum(s.generate_s + s.execute_s for s in traj.steps)
            per_step.append((wall - inside) / len(traj.steps))
            steps += len(traj.steps)
    return statistics.median(per_step), steps


def throughput(tasks, tools, concurrency: int) -> float:
    """Episodes/s through an NBAgent on a pool warmed before the clock starts (the pool it would build,
    passed in)."""

    async def go() -> float:
        async with AsyncKernelPool(
            concurrency,
            profile=CONFIG.profile,
            isolation=CONFIG.isolation,
            output_cap=CONFIG.output_cap,
            startup_code="import workbench.runtime",
        ) as pool:
            await pool.wait_warm()
            agent = NBAgent(world_solver(), tools=tools, config=CONFIG, concurrency=concurrency, pool=pool)
            t = time.perf_counter()
            trajs = await agent.arun(tasks, progress=False)
            elapsed = time.perf_counter() - t
            assert all(tr.termination == "submitted" for tr in trajs), {tr.termination for tr in trajs}
            return len(trajs) / elapsed

    return asyncio.run(go())


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--episodes", type=int, default=32)
    add_smoke_flag(parser)
    args = parser.parse_args()
    if args.smoke:
        args.episodes = 2
    world = make_world(seed=0, size="small")
    tools = search_registry(BM25Retriever.build(Corpus.from_rows(world.corpus()), show_progress=False))
    tasks = world.tasks("test")[: args.episodes]

    rtt = asyncio.run(kernel_round_trip(20 if args.smoke else 200))
    figure("kernel round trip execute('1+1') p50", rtt * 1e3, "ms")
    overhead, _steps = asyncio.run(overhead_per_step(tasks[: 2 if args.smoke else 12], tools))
    figure(
        "host overhead per step p50",
        overhead * 1e3,
        "ms",
        baseline=rtt * 1e3,
        target="ratio <= 0.2",
        ok=overhead / rtt <= 0.2,
    )
    base = None
    for c in (1, 2) if args.smoke else (1, 2, 4, 8):
        eps = throughput(tasks, tools, c)
        base = base or eps
        figure(f"episodes/s at concurrency {c}", eps, "ep/s", baseline=base)


if __name__ == "__main__":
    main()

"""NB-Agent under the environment standards: what OpenEnv's server and TRL's environment_factory cost.

    .venv/bin/python bench/bench_envs.py [--steps 40] [--episodes 8] [--concurrency 4]

- Step round trip: an OpenEnv `EnvClient.step()` (WebSocket, JSON, OpenEnv's server) against the served
  NB-Agent, vs a direct `LocalEpisodeSandbox.step` on a kernel of the same pool; each runs the cell `x = 1`.
  Median of `--steps`; the ratio served / direct (target <= 1.5 on loopback). Between them, the in-process
  `NBAgentEnvironment.step` (OpenEnv's API without the transport) splits the cost. The cell is as cheap as a
  cell gets, so the ratio shows the transport's fixed cost (thread hops: client loop, server loop, kernel loop)
  at its largest; on a loaded machine each hop waits for a core.
- Episodes/s on the same tasks ("What is 6 * 7?", two cells then the answer): through the TRL
  environment_factory class (`reset`, `run_code`, `submit_final_answer`, `environment_reward`, one instance
  per generation, called in turn as TRL's tool loop does) vs workbench's own trainer episodes
  (`NBAgentEpisodes` with a scripted policy playing the same turns, `--concurrency` at a time), printed.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _util import add_smoke_flag, figure

from workbench.agent.config import AgentConfig
from workbench.envs import EpisodeHost, EpisodeSession
from workbench.envs.openenv import NBAgentAction, NBAgentEnvironment
from workbench.envs.server import EnvServer, NBAgentClient
from workbench.envs.trl import environment_reward, tool_environment
from workbench.kernel.sync import run_sync
from workbench.trajectory import Task

CELL = "x = 1"
TURNS = [
    "<think>compute the product</think>\n<code>x = 6 * 7\nx</code>",
    "<think>the product is known</think>\n<code>submit_final_answer(str(x))</code>",
]


def direct_steps(host: EpisodeHost, n: int) -> list[float]:
    """Seconds per `LocalEpisodeSandbox.step(CELL)` on one kernel of `host`'s pool (after one warm-up)."""

    async def run() -> list[float]:
        session = EpisodeSession(host, Task(id="bench", question="q"))
        env = await session.open()
        try:
            await env.step(CELL, host.agent.exec_timeout_s)
            times = []
            for _ in range(n):
                t0 = time.perf_counter()
                await env.step(CELL, host.agent.exec_timeout_s)
                times.append(time.perf_counter() - t0)
            return times
        finally:
            await session.aclose()

    return run_sync(run())


def environment_steps(host: EpisodeHost, n: int) -> list[float]:
    """Seconds per in-process `NBAgentEnvironment.step` (OpenEnv's Environment API, no transport)."""
    env = NBAgentEnvironment(host)
    try:
        env.reset(question="q", answer="a")
        env.step(NBAgentAction(code=CELL))
        times = []
        for _ in range(n):
            t0 = time.perf_counter()
            env.step(NBAgentAction(code=CELL))
            times.append(time.perf_counter() - t0)
        return times
    finally:
        env.close()


def served_steps(host: EpisodeHost, n: int) -> list[float]:
    """Seconds per OpenEnv client `step()` round trip against `host` served by OpenEnv's server."""
    with EnvServer(host) as server, NBAgentClient(server.url).sync() as client:
        client.reset(question="q", answer="a")
        client.step(NBAgentAction(code=CELL))
        times = []
        for _ in range(n):
            t0 = time.perf_counter()
            client.step(NBAgentAction(code=CELL))
            times.append(time.perf_counter() - t0)
        return times


def factory_episodes(tasks: list[Task], concurrency: int) -> float:
    """Episodes/s through the TRL environment_factory class, each instance driven as TRL's tool loop drives it."""
    env_class = tool_environment(EpisodeHost(reward="em", agent=AgentConfig(max_steps=4), max_sessions=concurrency))
    envs = [env_class() for _ in range(concurrency)]
    try:
        envs[0].reset(question="warm-up", answer="")
        t0 = time.perf_counter()
        for start in range(0, len(tasks), concurrency):
            batch = list(zip(envs, tasks[start : start + concurrency], strict=False))
            for env, task in batch:
                env.reset(question=task.question, answer=task.golden_answers[0])
                env.run_code("x = 6 * 7\nx")
                env.submit_final_answer("42")
            rewards = environment_reward([env for env, _ in batch])
            assert rewards == [1.0] * len(batch), rewards
        return len(tasks) / (time.perf_counter() - t0)
    finally:
        env_class.close_all()


def own_episodes(tasks: list[Task], concurrency: int) -> float:
    """Episodes/s through workbench's own trainer episodes (`NBAgentEpisodes`), scored with em."""
    from workbench.policies import ScriptedPolicy
    from workbench.rewards import resolve_reward
    from workbench.train.run import NBAgentEpisodes

    runner = NBAgentEpisodes(agent_config=AgentConfig(max_steps=4), concurrency=concurrency)
    policy, scorer = ScriptedPolicy.from_turns(TURNS), resolve_reward("em")
    try:
        run_sync(runner(tasks[:1], policy))  # warm-up: the pool starts
        t0 = time.perf_counter()
        trajs = run_sync(runner(tasks, policy))
        totals = [scorer.score(t)["total"] for t in trajs]
        assert totals == [1.0] * len(tasks), [(t.termination, t.error) for t in trajs]
        return len(tasks) / (time.perf_counter() - t0)
    finally:
        runner.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=40, help="timed steps each way (default 40)")
    parser.add_argument("--episodes", type=int, default=8, help="episodes each way (default 8)")
    parser.add_argument("--concurrency", type=int, default=4, help="kernels at once (default 4)")
    add_smoke_flag(parser)
    args = parser.parse_args()
    if args.smoke:
        args.steps, args.episodes, args.concurrency = 3, 2, 2
    host = EpisodeHost(agent=AgentConfig(max_steps=args.steps + 4), max_sessions=1)
    direct = statistics.median(direct_steps(host, args.steps)) * 1000
    in_process = statistics.median(environment_steps(host, args.steps)) * 1000
    served = statistics.median(served_steps(host, args.steps)) * 1000  # EnvServer.stop closes the host
    figure("step, direct LocalEpisodeSandbox.step", direct, "ms")
    figure("step, NBAgentEnvironment.step in process", in_process, "ms", baseline=direct)
    figure(
        "step, OpenEnv client -> served NB-Agent",
        served,
        "ms",
        baseline=direct,
        target="<= 1.5x",
        ok=served <= 1.5 * direct,
    )
    tasks = [Task(id=f"t{i}", question="What is 6 * 7?", golden_answers=["42"]) for i in range(args.episodes)]
    own = own_episodes(tasks, args.concurrency)
    factory = factory_episodes(tasks, args.concurrency)
    figure(f"episodes/s, workbench NBAgentEpisodes (x{args.concurrency})", own, "ep/s")
    figure("episodes/s, TRL environment_factory", factory, "ep/s", baseline=own)


if __name__ == "__main__":
    main()

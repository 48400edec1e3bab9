"""`workbench serve-env` (NB-Agent as an OpenEnv environment), and `--env` (an environment as the episode
source of `workbench run`, `eval` and `train`).

    workbench serve-env --port 8010 --tools search --tasks data/tasks.jsonl --reward em --max-sessions 4
    workbench run --env openenv:my_envs.games:GuessEnv --episodes 8 --policy transformers:MODEL --out runs/guess
    workbench eval --env openenv+http://127.0.0.1:8010 --tasks resets.jsonl -k 4 --policy openai:URL

Any OpenEnv `EnvClient` (`workbench.envs.server.NBAgentClient`) resets a served NB-Agent with a question (or
a seed picking one of `--tasks`) and steps it one cell at a time. Heavy imports happen inside the handlers."""

from __future__ import annotations

import argparse
from typing import Any


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "serve-env",
        help="serve NB-Agent as an OpenEnv environment (one sandboxed kernel per session)",
        description="Serve NB-Agent with OpenEnv's server: /ws sessions for EnvClient, /reset, /step, /state, "
        "/schema. Each session runs in its own bubblewrap-sandboxed kernel.",
    )
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8010, help="port (default 8010)")
    p.add_argument("--public", action="store_true", help="allow a non-loopback --host (clients run code here)")
    p.add_argument("--tools", default="none", help="tool set name (workbench.resolve.tool_set_names(); default none)")
    p.add_argument("--corpus", default=None, help="corpus JSONL for a search tool set")
    p.add_argument("--index", default=None, help="saved index directory for a search tool set")
    p.add_argument("--tasks", default=None, help="tasks JSONL that reset(seed=...) picks from")
    p.add_argument("--reward", default=None, help="reward preset, component or spec file scoring each episode")
    p.add_argument("--max-sessions", type=int, default=4, help="sessions (kernels) at once (default 4)")
    p.add_argument("--max-steps", type=int, default=8, help="cells per episode (default 8)")
    p.add_argument("--profile", default="default", help="sandbox profile name or TOML file (default: default)")
    from workbench.cli.plugins import add_plugin_argument

    add_plugin_argument(p)
    p.set_defaults(func=_serve)


def _serve(args: argparse.Namespace) -> int:
    from workbench.agent.config import AgentConfig
    from workbench.envs import EpisodeHost
    from workbench.envs.server import EnvServer
    from workbench.resolve import load_tasks, load_tool_set

    tools = load_tool_set(args.tools, corpus=args.corpus, index=args.index, tasks_path=args.tasks)
    host = EpisodeHost(
        tools=tools,
        reward=args.reward,
        agent=AgentConfig(max_steps=args.max_steps, profile=args.profile),
        max_sessions=args.max_sessions,
        tasks=load_tasks(args.tasks) if args.tasks else (),
    )
    server = EnvServer(host, address=args.host, port=args.port, public=args.public).start()
    print(f"NB-Agent (OpenEnv) on {server.url}: {args.max_sessions} sessions, tools {args.tools}", flush=True)
    server.serve_forever()
    return 0


# -- `--env`: an environment as the episode source of `run`, `eval` and `train` ----------------------------
ENV_HELP = (
    "episode source: openenv:package.module:ClassName (an OpenEnv Environment on sys.path), "
    "openenv+http://HOST:PORT (a served one) or verifiers:NAME[?key=value&...] (a verifiers environment by its "
    "load_environment name, run in .venv-verifiers); tasks come from --tasks (reset arguments) or --episodes N"
)


def add_env_arguments(
    p: argparse.ArgumentParser, *, tasks_flag: str | None = "--tasks", turn_tokens: bool = True
) -> None:
    """`--env`, `--episodes`, `--action-field`, `--max-turn-tokens`; `tasks_flag` names the command's own
    JSONL flag, if any."""
    p.add_argument("--env", metavar="SPEC", help=ENV_HELP)
    where = f"; or {tasks_flag} JSONL rows as reset arguments" if tasks_flag else ""
    p.add_argument("--episodes", type=int, metavar="N", help=f"with --env: N episodes, reset(seed=0..N-1){where}")
    p.add_argument("--action-field", metavar="NAME", help="with --env: the action field that gets the model's text")
    if turn_tokens:
        p.add_argument("--max-turn-tokens", type=int, default=64, help="with --env: tokens per model turn (default 64)")


def env_tasks_from(args: argparse.Namespace, path: str | None) -> list[Any]:
    """The tasks of an `--env` run: `--episodes N` seeds, else the JSONL at `path` (reset arguments per row)."""
    from workbench.envs.episodes import env_tasks
    from workbench.errors import ConfigError

    if args.episodes is not None and path:
        raise ConfigError("--env: give --episodes N or a tasks file, not both")
    if args.episodes is not None:
        if args.episodes < 1:
            raise ConfigError("--episodes must be at least 1")
        return env_tasks(args.episodes)
    if not path:
        raise ConfigError("--env needs --episodes N (reset(seed=0..N-1)) or a JSONL file of reset arguments")
    return env_tasks(path, limit=getattr(args, "limit", None))


def env_runner(args: argparse.Namespace, **settings: Any) -> Any:
    """`EnvEpisodes` over `--env` with `--action-field` and the command's own settings."""
    from workbench.envs.episodes import EnvEpisodes

    return EnvEpisodes(args.env, action_field=args.action_field, **settings)


def run_env_episodes(args: argparse.Namespace, policy: Any, *, tasks_path: str | None, repeat: int = 1) -> list[Any]:
    """`workbench run/eval --env`: `policy` plays each task `repeat` times, scored (`--reward`, default env),
    into `--out`."""
    from workbench.agent.recorder import Recorder
    from workbench.blocking import run_blocking
    from workbench.errors import ConfigError
    from workbench.rewards import resolve_reward
    from workbench.store import Store

    if getattr(args, "executor", "local") != "local":
        raise ConfigError("--env episodes run in this process; drop --executor")
    tasks = [task for task in env_tasks_from(args, tasks_path) for _ in range(repeat)]
    runner = env_runner(
        args,
        max_turns=args.max_steps or 8,
        max_turn_tokens=args.max_turn_tokens,
        temperature=args.temperature if args.temperature is not None else (0.0 if repeat == 1 else 1.0),
        concurrency=args.concurrency,
    )
    reward = getattr(args, "reward", None) or "env"
    scorer = resolve_reward(reward)
    print(f"environment: {runner.source.name} (the model's text goes to {runner.action_field!r}); reward: {reward}")
    store = Store(args.out) if args.out else None
    try:
        recorder = Recorder(store)
        return [recorder.record(t, scorer) for t in run_blocking(runner(tasks, policy))]
    finally:
        if store is not None:
            store.close()


def env_summary(trajectories: list[Any], k: int = 1) -> dict[str, float]:
    """Episodes, mean return, the share the environment ended, mean turns, and pass@k (return > 0)."""
    from workbench.evaluate.metrics import pass_at_k

    n = max(len(trajectories), 1)
    by_task: dict[str, list[float]] = {}
    for t in trajectories:
        by_task.setdefault(t.task.id, []).append(float(t.reward or 0.0))
    return {
        "episodes": float(len(trajectories)),
        "mean_reward": sum(float(t.reward or 0.0) for t in trajectories) / n,
        "done_rate": sum(t.termination == "submitted" for t in trajectories) / n,
        "mean_turns": sum(len(t.steps) for t in trajectories) / n,
        f"pass@{k}": sum(pass_at_k(len(r), sum(x > 0 for x in r), k) for r in by_task.values()) / max(len(by_task), 1),
    }


def train_on_env(args: argparse.Namespace, config: Any) -> dict[str, Any]:
    """`workbench train --env`: train in this process on the environment's episodes (tasks: `--episodes N`,
    else the config's tasks_path as reset arguments); the reward is `env` unless the config names another."""
    from workbench.train.run import env_episodes, train

    if config.reward == "exact_match":  # the config default: an environment pays its own reward
        config = config.replace(reward="env")
    tasks = env_tasks_from(args, config.tasks_path or None)
    runner = env_episodes(config, args.env, action_field=args.action_field)
    print(
        f"environment: {runner.source.name} (the model's text goes to {runner.action_field!r}); reward: {config.reward}"
    )
    return train(config, tasks=tasks, episodes=runner)

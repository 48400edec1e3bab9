"""`workbench serve-env`: NB-Agent as an OpenEnv environment, served by OpenEnv's own server.

    workbench serve-env --port 8010 --tools search --tasks data/tasks.jsonl --reward em --max-sessions 4

Any OpenEnv `EnvClient` (`workbench.envs.server.NBAgentClient`) then resets it with a question (or a seed
picking one of `--tasks`) and steps it one cell at a time. Heavy imports happen inside the handler."""

from __future__ import annotations

import argparse


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

"""`workbench run`: NB-Agent episodes over a JSONL task file, into a run directory."""

from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("run", help="run NB-Agent episodes over a task file",
                       description="Run NB-Agent episodes, one sandboxed kernel each, into RUN_DIR's store.")
    p.add_argument("--tasks", required=True, help="JSONL with id, question, golden_answers (+ metadata)")
    p.add_argument("--policy", default="scripted",
                   help="scripted | scripted:NAME | transformers:PATH | openai:URL | vllm:PATH")
    p.add_argument("--profile", default="default", help="sandbox profile name or TOML path")
    p.add_argument("--concurrency", type=int, default=4)
    p.add_argument("--out", required=True, help="run directory (created)")
    p.add_argument("--corpus", help="JSONL corpus for the search tool (default: the tasks' world, if any)")
    p.add_argument("--index", help="a saved retriever index directory for the search tool")
    p.add_argument("--config", help="agent config TOML/YAML")
    p.add_argument("--max-steps", type=int)
    p.add_argument("--temperature", type=float)
    p.add_argument("--reward", default=None, help="reward spec preset or JSON file to score with")
    p.add_argument("--limit", type=int, help="only the first N tasks")
    p.add_argument("--isolation", choices=["bwrap", "none"], default="bwrap")
    p.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from workbench.agent.config import AgentConfig
    from workbench.agent.runner import NBAgent
    from workbench.agent.resolve import load_search_tool, load_tasks, resolve_policy, resolve_reward
    from workbench.store import Store

    overrides = {k: v for k, v in {"max_steps": args.max_steps, "temperature": args.temperature,
                                   "profile": args.profile, "isolation": args.isolation}.items()
                 if v is not None}
    config = AgentConfig.load(args.config, **overrides) if args.config else AgentConfig.from_dict(overrides)
    tasks = load_tasks(args.tasks, limit=args.limit)
    registry = load_search_tool(corpus=args.corpus, index=args.index, tasks_path=args.tasks)
    policy = resolve_policy(args.policy)
    out = Path(args.out)
    with Store(out) as store:
        agent = NBAgent(policy, tools=registry, config=config, store=store,
                        reward_spec=resolve_reward(args.reward), concurrency=args.concurrency)
        trajectories = agent.run(tasks)
    done = sum(t.termination == "submitted" for t in trajectories)
    print(f"{len(trajectories)} episodes, {done} submitted an answer; stored in {out}")
    print(f"look at them with: workbench show {out}")
    return 0

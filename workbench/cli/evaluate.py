"""`workbench eval`: the solver over a QA set, metrics per dataset and hop count."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from workbench.trajectory import Task


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "eval",
        help="evaluate a policy on a QA set (EM, cover-EM, F1, Avg@k, Pass@k)",
        description="Run the solver over a QA JSONL file; greedy by default, as the seeds evaluate.",
    )
    p.add_argument(
        "--dataset", nargs="+", help="QA JSONL file(s): question, golden_answers, ...; with --env: reset arguments"
    )
    p.add_argument(
        "--policy",
        default="scripted",
        help="scripted | transformers:MODEL | openai:URL | vllm:MODEL (MODEL: hub id, local dir, GGUF, models name)",
    )
    p.add_argument(
        "--retriever",
        help="saved index dir, bm25:CORPUS.jsonl, or http://HOST:PORT (Search-R1 server); "
        "default: BM25 over corpus.jsonl next to the dataset",
    )
    p.add_argument("-k", type=int, default=1, help="attempts per question (Avg@k, Pass@k)")
    p.add_argument("--temperature", type=float, help="default 0 (greedy) for k=1, 1.0 for k>1")
    p.add_argument("--max-steps", type=int, help="turns per episode (default: the model's own setting, else 8)")
    p.add_argument("--config", help="agent config TOML/YAML (its fields override the model's own settings)")
    from workbench.config_args import add_config_arguments

    add_config_arguments(p, "workbench.agent.config:AgentConfig")
    p.add_argument("--concurrency", type=int, default=4)
    p.add_argument("--limit", type=int, help="first N questions of each dataset")
    p.add_argument("--out", help="run directory: trajectories + eval.json")
    p.add_argument("--isolation", choices=["bwrap", "none"], default="bwrap")
    from workbench.cli.envs import add_env_arguments
    from workbench.cli.executors import add_executor_arguments

    add_env_arguments(p, tasks_flag="--dataset")
    from workbench.cli.harness import add_harness_argument
    from workbench.cli.plugins import add_plugin_argument

    add_harness_argument(p)
    add_plugin_argument(p)
    add_executor_arguments(p)
    p.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    if args.harness:
        return _run_harness(args)
    if args.env:
        return _run_env(args)
    tasks = _qa_tasks(args)
    from pathlib import Path

    from workbench.agent.config import AgentConfig
    from workbench.cli.agent import agent_config_for
    from workbench.cli.executors import executor_from_args
    from workbench.cli.recipes import eval_tools
    from workbench.cluster import ToolsSpec
    from workbench.cluster.select import absolute
    from workbench.evaluate.harness import evaluate
    from workbench.resolve import resolve_policy
    from workbench.store import Store

    executor = executor_from_args(
        args,
        policy=args.policy,
        worker_tools=ToolsSpec(
            "workbench.cli.recipes:eval_tools",
            retriever=_worker_retriever(args.retriever),
            dataset=absolute(args.dataset[0]),
        ),
    )
    tools = eval_tools(args.retriever, args.dataset[0]) if executor is None else None
    policy = resolve_policy(args.policy)
    flags = {"isolation": args.isolation, **({"max_steps": args.max_steps} if args.max_steps is not None else {})}
    config = AgentConfig.load(args.config, **flags) if args.config else AgentConfig.from_dict(flags)
    config = config.with_overrides(args.overrides)
    config = agent_config_for(policy, config, args.policy)
    store = Store(args.out) if args.out else None
    try:
        report = evaluate(
            tasks,
            policy,
            tools=tools,
            k=args.k,
            temperature=args.temperature,
            config=config,
            store=store,
            concurrency=args.concurrency,
            executor=executor,
        )
    finally:
        if store is not None:
            store.close()
        if executor is not None:
            executor.close()
    print(report.format())
    if args.out:
        print(
            f"saved {report.save(Path(args.out) / 'eval.json')}; each trajectory is stored with its metrics "
            "as rewards (em, cover_em, f1; total = em)"
        )
    return 0


def _run_harness(args: argparse.Namespace) -> int:
    """`workbench eval --harness`: your own agent k times per question through a model gateway, greedy for k=1."""
    from pathlib import Path

    from workbench.cli.harness import check_harness_args, harness_runner
    from workbench.evaluate.harness import evaluate
    from workbench.resolve import resolve_policy
    from workbench.store import Store

    check_harness_args(args)
    tasks = _qa_tasks(args)
    temperature = args.temperature if args.temperature is not None else (0.0 if args.k == 1 else 1.0)
    run_id = Path(args.out).name if args.out else ""
    runner = harness_runner(args.harness, temperature=temperature, concurrency=args.concurrency, run_id=run_id)
    store = Store(args.out) if args.out else None
    try:
        report = evaluate(
            tasks, resolve_policy(args.policy), k=args.k, temperature=temperature, store=store, episodes=runner
        )
    finally:
        runner.close()
        if store is not None:
            store.close()
    print(report.format())
    if args.out:
        print(f"saved {report.save(Path(args.out) / 'eval.json')}; each trajectory is stored with its metrics")
    return 0


def _run_env(args: argparse.Namespace) -> int:
    """`workbench eval --env`: each task k times against the environment, its reward as the score."""
    import json
    from pathlib import Path

    from workbench.cli.envs import env_summary, run_env_episodes
    from workbench.errors import ConfigError
    from workbench.resolve import resolve_policy

    if args.dataset and len(args.dataset) > 1:
        raise ConfigError("eval --env takes one --dataset file of reset arguments")
    dataset = args.dataset[0] if args.dataset else None
    trajectories = run_env_episodes(args, resolve_policy(args.policy), tasks_path=dataset, repeat=args.k)
    summary = env_summary(trajectories, args.k)
    print("  ".join(f"{name} {value:.3f}" for name, value in summary.items()))
    if args.out:
        saved = Path(args.out) / "eval.json"
        saved.write_text(json.dumps({"k": args.k, "env": args.env, **summary}, indent=2))
        print(f"saved {saved}; each trajectory is stored with the environment's reward (env; total = env)")
    return 0


def _qa_tasks(args: argparse.Namespace) -> list[Task]:
    from workbench.errors import ConfigError

    if not args.dataset:
        raise ConfigError("workbench eval needs --dataset FILE (or --env SPEC with --episodes N)")
    return [task for path in args.dataset for task in _dataset_tasks(path, args.limit)]


def _dataset_tasks(path: str, limit: int | None) -> list[Task]:
    """The tasks of one dataset file, each labelled with the dataset's name (the file's stem)."""
    from pathlib import Path

    from workbench.resolve import load_tasks

    tasks = load_tasks(path, limit=limit)
    for task in tasks:
        task.metadata.setdefault("dataset", Path(path).stem)
    return tasks


def _worker_retriever(retriever: str | None) -> str | None:
    """The retriever as a worker on another machine reads it: a local path (bare or after bm25:) made
    absolute; a URL as given."""
    from workbench.cluster.select import absolute

    if retriever and not retriever.startswith(("http://", "https://", "bm25:")):
        return absolute(retriever)
    if retriever and retriever.startswith("bm25:"):
        return "bm25:" + str(absolute(retriever[len("bm25:") :]))
    return retriever

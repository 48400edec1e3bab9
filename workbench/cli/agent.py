"""`workbench run`: NB-Agent episodes (or your own agent's: `--harness`) over a JSONL task file, into a run dir."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path

    from workbench.agent.config import AgentConfig
    from workbench.contracts import Scorer
    from workbench.policies.base import Policy
    from workbench.trajectory import Task, Trajectory


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "run",
        help="run NB-Agent episodes over a task file",
        description="Run NB-Agent episodes, one sandboxed kernel each, into RUN_DIR's store. "
        "A model dir's own agent settings (prompt, window, turns) apply unless "
        "flags or --config set them.",
    )
    p.add_argument(
        "--tasks", help="JSONL with id, question, golden_answers (+ metadata); with --env: reset arguments per row"
    )
    p.add_argument(
        "--policy",
        default="scripted",
        help="scripted | scripted:NAME | transformers:MODEL | openai:URL | vllm:MODEL | BACKEND:ARG "
        "(a backend your code registered with workbench.policies.register_backend)",
    )
    p.add_argument(
        "--tools",
        default="search",
        help="the tool set: search (over --index / --corpus / the tasks' world), none, or a NAME your "
        "code registered with workbench.resolve.register_tool_set",
    )
    from workbench.cli.harness import add_harness_argument
    from workbench.cli.plugins import add_plugin_argument

    add_harness_argument(p)
    add_plugin_argument(p)
    p.add_argument("--profile", default="default", help="sandbox profile name or TOML path")
    p.add_argument("--concurrency", type=int, default=4)
    p.add_argument("--out", required=True, help="run directory (created)")
    p.add_argument("--corpus", help="JSONL corpus for the search tool (default: the tasks' world, if any)")
    p.add_argument("--index", help="a saved retriever index directory for the search tool")
    p.add_argument("--config", help="agent config TOML/YAML")
    from workbench.config_args import add_config_arguments

    add_config_arguments(p, "workbench.agent.config:AgentConfig")
    p.add_argument("--max-steps", type=int)
    p.add_argument("--temperature", type=float)
    p.add_argument(
        "--reward",
        default=None,
        help="reward preset, component or spec file to score with; default: em when every task "
        "has golden_answers (with --env: env, the environment's own); 'none': no scoring",
    )
    p.add_argument("--limit", type=int, help="only the first N tasks")
    p.add_argument("--isolation", choices=["bwrap", "none"], default="bwrap")
    from workbench.cli.envs import add_env_arguments
    from workbench.cli.executors import add_executor_arguments

    add_env_arguments(p)
    add_executor_arguments(p)
    p.set_defaults(func=_run)


def agent_config_for(policy: Policy, config: AgentConfig | None, source: str) -> AgentConfig:
    """`config` completed with the agent settings `policy`'s model carries; prints which it took."""
    from workbench.agent.config import describe_taken, policy_settings, with_model_settings

    settings = policy_settings(policy)
    config, taken = with_model_settings(config, settings)
    line = describe_taken(settings, taken, source)
    if line:
        print(line, flush=True)
    return config


def pick_reward(name: str | None, tasks: list[Task]) -> tuple[Scorer | None, str]:
    """The scorer for `run` and a line saying which: `name`, else em when every task has gold answers."""
    from workbench.rewards import resolve_reward

    if name is not None and name.strip().lower() == "none":
        return None, "reward: none (--reward none)"
    if name:
        return resolve_reward(name), f"reward: {name}"
    if tasks and all(task.golden_answers for task in tasks):
        return resolve_reward(
            "em"
        ), "reward: em (exact match against golden_answers; --reward NAME to change, --reward none to skip)"
    return None, "reward: none (not every task has golden_answers; --reward NAME to score anyway)"


def _run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from workbench.agent.config import AgentConfig
    from workbench.agent.runner import NBAgent
    from workbench.errors import ConfigError
    from workbench.resolve import load_tasks, load_tool_set, resolve_policy
    from workbench.store import Store

    if args.harness:
        return _run_harness(args)
    if args.env:
        return _run_env(args)
    if not args.tasks:
        raise ConfigError("workbench run needs --tasks FILE (or --env SPEC with --episodes N)")
    overrides = {
        k: v
        for k, v in {
            "max_steps": args.max_steps,
            "temperature": args.temperature,
            "profile": args.profile,
            "isolation": args.isolation,
        }.items()
        if v is not None
    }
    config = AgentConfig.load(args.config, **overrides) if args.config else AgentConfig.from_dict(overrides)
    config = config.with_overrides(args.overrides)
    tasks = load_tasks(args.tasks, limit=args.limit)
    reward, reward_line = pick_reward(args.reward, tasks)
    from workbench.cli.executors import executor_from_args
    from workbench.cluster.select import tool_set_spec

    paths = {"corpus": args.corpus, "index": args.index, "tasks_path": args.tasks}
    executor = executor_from_args(args, worker_tools=tool_set_spec(args.tools, **paths), policy=args.policy)
    registry = load_tool_set(args.tools, **paths) if executor is None else None
    policy = resolve_policy(args.policy)
    config = agent_config_for(policy, config, args.policy)
    print(reward_line, flush=True)
    out = Path(args.out)
    with Store(out) as store:
        if executor is None:
            agent = NBAgent(
                policy, tools=registry, config=config, store=store, reward_spec=reward, concurrency=args.concurrency
            )
        else:
            agent = NBAgent(policy, config=config, store=store, reward_spec=reward, executor=executor)
        try:
            trajectories = agent.run(tasks)
        finally:
            if executor is not None:
                executor.close()
    done = sum(t.termination == "submitted" for t in trajectories)
    print(f"{len(trajectories)} episodes, {done} submitted an answer; stored in {out}")
    _closing_lines(trajectories, reward, out)
    return 0


def _closing_lines(trajectories: list[Trajectory], reward: Scorer | None, out: Path) -> None:
    """The mean reward (when scored) and where to look."""
    if reward is not None:
        totals = [t.reward for t in trajectories if t.reward is not None]
        mean = sum(totals) / len(totals) if totals else float("nan")
        print(f"mean reward {mean:.3f} ({getattr(reward, 'name', 'reward')}, stored with each trajectory)")
    print(f"look at them with: workbench show {out}")


def _run_harness(args: argparse.Namespace) -> int:
    """`workbench run --harness`: the agent on each task, scored with the reward, written to `--out`'s store."""
    from pathlib import Path

    from workbench.agent.recorder import Recorder
    from workbench.cli.harness import check_harness_args, harness_runner, harness_summary
    from workbench.errors import ConfigError
    from workbench.gateway.scoring import check_scorer
    from workbench.kernel.sync import run_sync
    from workbench.resolve import load_tasks, resolve_policy
    from workbench.store import Store

    check_harness_args(args)
    if not args.tasks:
        raise ConfigError("workbench run --harness needs --tasks FILE (JSONL with id, question, golden_answers)")
    tasks = load_tasks(args.tasks, limit=args.limit)
    reward, reward_line = pick_reward(args.reward, tasks)
    if reward is not None:
        check_scorer(reward)
    out = Path(args.out)
    runner = harness_runner(args.harness, temperature=args.temperature, concurrency=args.concurrency, run_id=out.name)
    policy = resolve_policy(args.policy)
    print(reward_line, flush=True)
    with Store(out) as store:
        try:
            played = run_sync(runner(tasks, policy))
        finally:
            runner.close()
        recorder = Recorder(store)
        trajectories = [recorder.record(traj, reward) for traj in played]
    print(f"{harness_summary(trajectories)}; stored in {out}")
    _closing_lines(trajectories, reward, out)
    return 0


def _run_env(args: argparse.Namespace) -> int:
    """`workbench run --env`: the policy against an environment, scored (default: its own reward), stored."""
    from workbench.cli.envs import env_summary, run_env_episodes
    from workbench.resolve import resolve_policy

    trajectories = run_env_episodes(args, resolve_policy(args.policy), tasks_path=args.tasks)
    summary = env_summary(trajectories)
    print(
        f"{len(trajectories)} episodes, {summary['done_rate']:.0%} ended by the environment; mean reward "
        f"{summary['mean_reward']:.3f}, {summary['mean_turns']:.1f} turns; stored in {args.out}"
    )
    print(f"look at them with: workbench show {args.out}")
    return 0

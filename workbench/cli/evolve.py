"""`workbench evolve CONFIG`: Dr. Zero / Agent0 self-evolution from a shell (see `workbench.evolve.experiment`)."""

from __future__ import annotations

import argparse
from typing import Any


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "evolve",
        help="run proposer/solver self-evolution (Dr. Zero, Agent0)",
        description="Run self-evolution iterations from a TOML/YAML config: top-level "
        "mode, corpus, proposer, solver; an [evolve] table; an optional [train] table.",
    )
    p.add_argument("config", nargs="?", help="evolve config (.toml / .yaml); see --help-config")
    p.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="FIELD=VALUE",
        help="override a field: a job field (mode, corpus, ...), train.FIELD, or an [evolve] field "
        "(JSON values parse: --set iterations=2)",
    )
    p.add_argument("--mode", choices=["drzero", "agent0"], help="with --help-config: that mode's fields")
    p.add_argument("--resume", action="store_true", help="skip iterations whose state file exists")
    p.add_argument("--help-config", action="store_true", help="list every config field and exit")
    from workbench.cli.executors import add_executor_arguments

    add_executor_arguments(p)
    from workbench.cli.plugins import add_plugin_argument

    add_plugin_argument(p)
    p.set_defaults(func=_run)


def _executor(args: argparse.Namespace, job: Any, config: Any) -> Any:
    """None (local kernels), or Ray workers with both roles' tool sets (BM25 over the job's corpus)."""
    from workbench.cli.executors import executor_from_args
    from workbench.cluster import ToolsSpec
    from workbench.cluster.select import absolute
    from workbench.errors import ConfigError

    if args.executor == "ray" and args.ray_mode != "env":
        raise ConfigError("evolve samples its proposer and solver in this process: use --ray-mode env")
    args.concurrency = config.concurrency
    corpus = absolute(job.corpus)
    return executor_from_args(
        args,
        worker_tools={
            role: ToolsSpec("workbench.cli.recipes:evolve_tools", role=role, corpus=corpus)
            for role in ("proposer", "solver")
        },
    )


def _help(mode: str) -> None:
    from workbench.evolve.config import Agent0Config, DrZeroConfig
    from workbench.evolve.experiment import EvolveExperiment

    print("top-level fields:")
    for name, text in EvolveExperiment.fields_help().items():
        print(f"  {name:26s} {text}")
    cls = DrZeroConfig if mode == "drzero" else Agent0Config
    print(f"\n[evolve] fields ({cls.__name__}, mode = {mode!r}; --mode agent0|drzero shows the other):")
    for name, text in cls.fields_help().items():
        print(f"  {name:26s} {text}")
    print("\n[train] fields: see `workbench train --help-config`")


def _parse_overrides(items: list[str]) -> dict[str, Any]:
    """--set items as EvolveExperiment.from_dict's overrides: each value read by its field's type (a job field,
    train.FIELD, else an [evolve] field of either mode), so `--set run_id=123` stays text."""
    from typing import Any as AnyType

    from workbench.configfile import field_type, parse_value
    from workbench.errors import ConfigError
    from workbench.evolve.asearcher import ASearcherConfig
    from workbench.evolve.config import Agent0Config, DrZeroConfig
    from workbench.evolve.experiment import EvolveExperiment
    from workbench.train.config import TrainConfig

    out: dict[str, Any] = {}
    for item in items:
        key, sep, text = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ConfigError(f"--set {item!r}: write FIELD=VALUE")
        if key.startswith("train."):
            tp = field_type(TrainConfig, key.split(".")[1:])
        elif key in EvolveExperiment.config_types():
            tp = field_type(EvolveExperiment, [key])
        else:
            types = (field_type(cls, key.split(".")) for cls in (DrZeroConfig, Agent0Config, ASearcherConfig))
            tp = next((t for t in types if t is not AnyType), AnyType)
        out[key] = parse_value(text, tp)
    return out


def _run(args: argparse.Namespace) -> int:
    from workbench.errors import ConfigError

    overrides = _parse_overrides(args.overrides)
    if args.help_config:
        mode = args.mode
        if mode is None and args.config:
            from workbench.configfile import read_config_file

            mode = read_config_file(args.config, what="evolve config").get("mode")
        _help(mode or "drzero")
        return 0
    if not args.config:
        raise ConfigError(
            "workbench evolve needs a CONFIG file (see --help-config for the fields; "
            "examples/evolve.toml is a small one)"
        )
    from workbench.evolve.experiment import EvolveExperiment, run_experiment

    if args.mode:
        overrides["mode"] = args.mode
    job = EvolveExperiment.load(args.config, **overrides)
    config = job.evolve_config()
    trained = "no updates" if job.train is None else "updates with [train]"
    print(
        f"evolve ({job.mode}): proposer {job.proposer}, solver {job.solver}, {config.iterations} iteration(s), "
        f"{trained}; run dir {config.run_dir}",
        flush=True,
    )
    executor = _executor(args, job, config)
    try:
        result = run_experiment(job, resume=args.resume, executor=executor)
    finally:
        if executor is not None:
            executor.close()
    for it in result.iterations:
        shown = ", ".join(f"{k.split('/', 1)[-1]}={v:.3f}" for k, v in sorted(it.metrics.items()) if "/hop" not in k)
        print(f"iteration {it.iteration}: {it.qa_size} questions in {it.qa_path}; {shown}")
    print(f"look at it: workbench show {result.run_dir}   |   EvolutionDashboard({str(result.run_dir)!r})")
    return 0

"""`workbench train CONFIG`: launch a training run from a shell, with a progress bar.

Under a distributed launcher (`torchrun --nproc_per_node 2 -m workbench train CONFIG`, or `accelerate
launch` with a multi-process config) every rank trains in its own process; see `workbench.train.processes`."""

from __future__ import annotations

import argparse
from typing import Any


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "train",
        help="train a policy with RL (TRL GRPO + workbench episodes)",
        description="Run RL training from a TOML/YAML config in a child process.",
    )
    p.add_argument("config", nargs="?", help="train config (.toml / .yaml); optional with --preset")
    p.add_argument(
        "--preset",
        metavar="NAME",
        help="start from a seed paper's settings: drzero_solver, "
        "drzero_proposer, zerosearch, agent0_executor, agent0_curriculum, asearcher, l0 "
        "(the config file and --set override it)",
    )
    p.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="FIELD=VALUE",
        help="override a config field, dotted for nested ones (--set max_steps=3 --set "
        "estimator_params.adpo.p_low=0.2); VALUE is read by the field's type",
    )
    p.add_argument(
        "--foreground",
        action="store_true",
        help="train in this process instead of a child (always so under torchrun / accelerate launch)",
    )
    p.add_argument("--help-config", action="store_true", help="list every config field and exit")
    p.add_argument(
        "--executor",
        choices=["local", "ray"],
        help="nbagent episodes: local kernels, or kernel workers "
        "on a Ray cluster (the model stays here); sets the config's executor",
    )
    p.add_argument("--ray-address", help="with --executor ray: 'auto', HOST:PORT; unset starts a local cluster")
    from workbench.cli.envs import add_env_arguments

    add_env_arguments(p, tasks_flag="the config's tasks_path", turn_tokens=False)  # --env trains in this process
    from workbench.cli.harness import HARNESS_HELP
    from workbench.cli.plugins import add_plugin_argument

    p.add_argument("--harness", metavar="MODULE:FUNCTION|NAME", help=HARNESS_HELP + "; sets the config's harness")
    add_plugin_argument(p)
    p.set_defaults(func=_run)


def load_config(path: str | None, preset: str | None, overrides: dict[str, Any]) -> Any:
    """Preset values, then the config file's, then the overrides (nested tables merge)."""
    from workbench.configfile import merge_nested, read_config_file
    from workbench.train.config import TrainConfig

    data: dict[str, Any] = {}
    if preset:
        from workbench.train.presets import preset_values

        data.update(preset_values(preset))
    if path:
        data.update(read_config_file(path, what="train config", table="train"))
    return TrainConfig.from_dict(merge_nested(data, overrides))


def _run(args: argparse.Namespace) -> int:
    from workbench.errors import ConfigError
    from workbench.train.config import TrainConfig

    if args.help_config:
        for name, text in TrainConfig.fields_help(args.preset).items():
            print(f"{name:28s} {text}")
        return 0
    if not args.config and not args.preset:
        raise ConfigError("workbench train needs a CONFIG file or --preset NAME (see --help-config for the fields)")
    from workbench.configfile import parse_overrides

    overrides = parse_overrides(TrainConfig, args.overrides)
    flags = (("executor", args.executor), ("ray_address", args.ray_address), ("harness", args.harness))
    overrides.update({k: v for k, v in flags if v})
    config = load_config(args.config, args.preset, overrides)
    if args.env:
        from workbench.cli.envs import train_on_env

        print(train_on_env(args, config))
        return 0
    from workbench.train.processes import is_main_process, world_size

    if args.foreground or world_size() > 1:  # under torchrun / accelerate launch each rank trains in place
        from workbench.train.run import train

        main = is_main_process()
        if main:
            for name, where in config.log_locations().items():
                print(f"{name} logs: {where}")
        summary = train(config)
        if main:
            print(summary)
        return 0
    from tqdm.auto import tqdm

    from workbench.train.launch import launch

    handle = launch(config)
    for name, where in config.log_locations().items():
        print(f"{name} logs: {where}")
    bar = tqdm(total=config.max_steps, desc="train", unit="step")
    try:
        for row in handle.stream():
            bar.n = min(row.get("step", bar.n), config.max_steps)
            if "reward" in row:
                bar.set_postfix(reward=f"{row['reward']:.3f}")
            bar.refresh()
    except KeyboardInterrupt:
        bar.write("stopping (saving after the current step)...")
        handle.stop()
    finally:
        bar.close()
    status = handle.wait()
    print(f"training {status}: {config.output_dir}")
    if status == "failed":
        print(handle.log_tail())
        return 1
    return 0

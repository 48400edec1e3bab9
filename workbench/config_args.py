"""`--help-config` and `--set` for every command that takes a config (the idiom is `workbench.configfile`):
the `workbench` subcommands and `python -m workbench.demo`.

add_config_arguments(parser, "workbench.agent.config:AgentConfig")
config = config.with_overrides(args.overrides)          # --set max_steps=4 --set trim=soft
"""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Sequence
from typing import Any


def config_class(spec: str) -> Any:
    """The config class named "module:Class" (imported only when asked for: the CLI starts fast)."""
    module, _, name = spec.partition(":")
    return getattr(importlib.import_module(module), name)


class HelpConfig(argparse.Action):
    """`--help-config`: print every field of the config (name, type, default, help) and exit, like --help
    (so a command's required arguments are not needed)."""

    def __init__(self, option_strings: Sequence[str], dest: str, config: str = "", **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)
        self.config = config

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any, option: Any = None):
        from workbench.configfile import format_fields_help

        print(format_fields_help(config_class(self.config)))
        parser.exit()


def add_config_arguments(parser: argparse.ArgumentParser, config: str) -> None:
    """Add `--set FIELD=VALUE` (repeatable; `args.overrides`) and `--help-config` for the config class
    `config` ("module:Class")."""
    name = config.rpartition(":")[2]
    parser.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="FIELD=VALUE",
        help=f"override a field of {name} (dotted for nested ones); VALUE is read by the field's type "
        "(text for a text field, else JSON: --set max_steps=4). See --help-config",
    )
    parser.add_argument("--help-config", action=HelpConfig, config=config, help=f"list every {name} field and exit")


__all__ = ["HelpConfig", "add_config_arguments", "config_class"]

"""The `workbench` command.

The top layer: one module here per command group registers its subcommands (`register(subparsers)`,
which imports nothing heavy, so `workbench --help` is fast) and turns the flags into objects; no layer
below imports this package."""

from __future__ import annotations

import argparse
import importlib
import sys

from workbench.console import quiet_when_reader_leaves
from workbench.errors import WorkbenchError

# Modules providing `register(subparsers)`. Order = order in --help.
COMMAND_MODULES = [
    "workbench.cli.kernel",
    "workbench.cli.agent",
    "workbench.cli.store",
    "workbench.cli.policies",
    "workbench.cli.models",
    "workbench.cli.search",
    "workbench.cli.evaluate",
    "workbench.cli.train",
    "workbench.cli.evolve",
    "workbench.cli.widgets",
    "workbench.cli.envs",
    "workbench.cli.gateway",
]


def installed_version() -> str:
    """The installed distribution's version (workbench-rl), else the package's own `__version__` (a checkout)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("workbench-rl")
    except PackageNotFoundError:
        import workbench

        return workbench.__version__


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="workbench", description=__doc__.split("\n")[0])
    parser.add_argument("--version", action="version", version=f"%(prog)s {installed_version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    """The `workbench` command: `main(["run", "--tasks", ...])` returns the exit status (1 on a `WorkbenchError`, with
    its message on stderr)."""
    return quiet_when_reader_leaves(lambda: _run(argv))


def _run(argv: list[str] | None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        from workbench.cli.plugins import load_plugins

        load_plugins(getattr(args, "plugin", None) or [])  # before the command resolves any name
        return int(args.func(args) or 0)
    except WorkbenchError as exc:
        print(f"workbench: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


__all__ = ["main"]

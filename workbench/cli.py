"""The `workbench` command. Each layer registers its own subcommands in `<layer>/cli.py`
(a `register(subparsers)` function that imports nothing heavy), so `workbench --help` is fast."""

from __future__ import annotations

import argparse
import importlib
import sys

from workbench.errors import WorkbenchError

# Modules providing `register(subparsers)`. Order = order in --help.
COMMAND_MODULES = [
    "workbench.kernel.cli",
    "workbench.agent.cli",
    "workbench.store.cli",
    "workbench.policies.cli",
    "workbench.search.cli",
    "workbench.evaluate.cli",
    "workbench.train.cli",
    "workbench.evolve.cli",
    "workbench.widgets.cli",
]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="workbench", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except WorkbenchError as exc:
        print(f"workbench: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())

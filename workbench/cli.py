"""The `workbench` command. Each layer registers its own subcommands in `<layer>/cli.py`
(a `register(subparsers)` function that imports nothing heavy), so `workbench --help` is fast."""

from __future__ import annotations

import argparse
import importlib
import os
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
    try:
        try:
            return _run(argv)
        finally:  # also after argparse's --help exit: a closed pipe shows up here while output is still buffered
            sys.stdout.flush()
    except BrokenPipeError:
        return _reader_gone()


def _run(argv: list[str] | None) -> int:
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


# What a shell reports for a writer killed by SIGPIPE (128 + 13): `workbench show RUN | head` ends like `cat | head`.
BROKEN_PIPE_EXIT = 141


def _reader_gone() -> int:
    """The reader of stdout went away (`| head`): stop quietly. Python's recipe: point stdout at devnull so the
    interpreter's final flush at exit does not raise a second BrokenPipeError."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    return BROKEN_PIPE_EXIT


if __name__ == "__main__":
    sys.exit(main())

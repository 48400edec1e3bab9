"""`--plugin MODULE`: your registrations on the command line, for every command that resolves names.

    workbench train examples/train.toml --plugin my_lab.workbench_plugins --set estimator=my_grpo
    workbench run --tasks tasks.jsonl --plugin my_lab.workbench_plugins --policy mine:ARG --tools my_tools

A plugin is a module on sys.path (PYTHONPATH) with a `register()` function that makes registrations:
`@estimator(NAME)`, `@reward(NAME)`, `register_backend`, `register_scripted`, `register_tool_set`,
`register_env_source`, `register_harness`. `workbench` imports every `--plugin` (repeatable) and calls its `register()`
before the command runs, so the names resolve in this process and in every process it launches.
A command that resolves names calls `add_plugin_argument(parser)`; `tests/test_cli_plugins.py` holds the
list and fails on a `serve-*` command without it. `load_plugins` itself lives in `workbench.registrations`
(a low layer), so a config's own list of plugins can be loaded where the config resolves names.
"""

from __future__ import annotations

import argparse

from workbench.registrations import load_plugins

PLUGIN_HELP = (
    "import MODULE and call its register() before anything resolves: your estimator, reward, policy backend, "
    "scripted policy, tool set, env source or harness (repeatable)"
)


def add_plugin_argument(p: argparse.ArgumentParser) -> None:
    """`--plugin MODULE` (repeatable) on a command's parser; `workbench.cli.main` loads them."""
    p.add_argument("--plugin", action="append", default=[], metavar="MODULE", help=PLUGIN_HELP)


__all__ = ["PLUGIN_HELP", "add_plugin_argument", "load_plugins"]

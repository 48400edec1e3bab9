"""One word, one thing: no public name is defined in two modules of `workbench/` unless the allow-list says why.

A public name is a top-level function or class whose name does not start with `_`, in a module whose own
name does not start with `_` (a private module's names are reached only through its package). Read with
`ast`, so nothing is imported. Overloads (several `def`s of one name in one module) count once.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

from source_tree import parse_file

PACKAGE = Path(__file__).resolve().parents[1] / "workbench"

# name -> why two modules may define it. Keep it short: a new entry needs a reason a reader accepts.
ALLOWED: dict[str, str] = {
    "main": "the entry point of each `python -m` module",
    "register": "each `workbench/cli/*.py` adds its subcommands through `register(subparsers)`",
    "next_turn": "the scripted agents' protocol: each scripted agent module answers `next_turn(context, ...)`",
    "em_reward": "reward components of two seeds (Search-R1's and ASearcher's EM), registered under distinct names",
    "f1_reward": "reward components of two seeds (Search-R1's and ASearcher's F1), registered under distinct names",
    "format_reward": "reward components of two seeds (ASearcher's and Dr. Zero's format), under distinct names",
}


def public_definitions() -> dict[str, list[str]]:
    """Each public top-level function/class name → the modules (dotted) that define it."""
    where: dict[str, list[str]] = defaultdict(list)
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.stem.startswith("_") and path.stem != "__init__":
            continue
        module = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        tree = parse_file(path)
        for node in tree.body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and not node.name.startswith(
                "_"
            ):
                if module not in where[node.name]:
                    where[node.name].append(module)
    return where


def test_no_public_name_means_two_things() -> None:
    duplicates = {name: mods for name, mods in public_definitions().items() if len(mods) > 1}
    unexplained = {name: mods for name, mods in duplicates.items() if name not in ALLOWED}
    assert unexplained == {}, "rename the less-used one (or add it to ALLOWED with its reason)"


def test_allow_list_has_no_stale_entries() -> None:
    where = public_definitions()
    stale = sorted(name for name in ALLOWED if len(where.get(name, [])) < 2)
    assert stale == [], "these names are defined once now: drop them from ALLOWED"
    assert all(reason.strip() for reason in ALLOWED.values())

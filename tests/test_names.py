"""One word, one thing: no public name is defined in two modules of `workbench/` unless the allow-list says why.

A public name is a top-level function or class whose name does not start with `_`, in a module whose own
name does not start with `_` (a private module's names are reached only through its package). Read with
`ast`, so nothing is imported. Overloads (several `def`s of one name in one module) count once.
"""

from __future__ import annotations

import ast
import re
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


# The glossary (docs/glossary.md) as data: a word in a public name -> where it may appear, and why.
# A public top-level class or function whose name holds the word (any case, CamelCase or snake_case)
# outside those places is using the word for something else: rename it, or add the place with its reason.
GLOSSARY_RULES: dict[str, tuple[tuple[str, ...], str]] = {
    "rollout": (
        ("workbench/gateway/", "workbench/envs/verifiers_bridge.py"),
        "one episode an outside harness plays through the model gateway; verifiers' own word in its sidecar",
    ),
    "session": (
        (
            "workbench/envs/session.py",
            "workbench/envs/openenv.py",
            "workbench/envs/server.py",
            "workbench/envs/verifiers_bridge.py",
        ),
        "the outward side only: a client's connection to an episode workbench serves (OpenEnv's word); "
        "verifiers' own word in its sidecar",
    ),
    "environment": (
        ("workbench/envs/",),
        "an RL environment of another standard (OpenEnv, verifiers, TRL's environment_factory)",
    ),
    "gateway": (
        ("workbench/gateway/", "workbench/tools/gateway.py", "workbench/runtime/"),
        "the model gateway in workbench/gateway/, the tool gateway and its in-kernel client elsewhere",
    ),
    "toolcall": (
        ("workbench/gateway/", "workbench/runtime/client.py"),
        "a model's OpenAI-style tool call; the kernel's calls are host calls. In the kernel, `ToolCallError` is "
        "what the model's code sees when a tool fails: its name is part of the observations models were trained on",
    ),
}


def _words(name: str) -> str:
    """`RolloutDir` / `rollout_dir` / `ToolCallError` -> 'rolloutdir' / 'rollout_dir' / 'toolcallerror'."""
    return name.lower()


def glossary_violations(root: Path = PACKAGE) -> list[str]:
    """`path:line name (word)` for each public top-level name that uses a glossary word outside its places."""
    found = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root.parent).as_posix()
        for node in parse_file(path).body:
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) or node.name.startswith("_"):
                continue
            squashed = _words(node.name).replace("_", "")
            for word, (places, _why) in GLOSSARY_RULES.items():
                if word in squashed and not rel.startswith(places):
                    found.append(f"{rel}:{node.lineno} {node.name} ({word})")
    return found


def test_the_glossary_rules_find_a_misused_word(tmp_path: Path) -> None:
    pkg = tmp_path / "workbench"
    (pkg / "sandbox").mkdir(parents=True)
    (pkg / "sandbox" / "dirs.py").write_text("class RolloutDir: ...\ndef kernel_dir(): ...\n", encoding="utf-8")
    (pkg / "gateway").mkdir()
    (pkg / "gateway" / "gw.py").write_text("class Rollout: ...\nclass ChatToolCall: ...\n", encoding="utf-8")
    assert glossary_violations(pkg) == ["workbench/sandbox/dirs.py:1 RolloutDir (rollout)"]


def test_each_glossary_word_means_one_thing() -> None:
    misused = glossary_violations()
    assert misused == [], "see docs/glossary.md; rename these (deprecated alias kept) or add the place:\n" + "\n".join(
        misused
    )


def test_the_glossary_page_names_each_rule_word() -> None:
    page = (PACKAGE.parent / "docs" / "glossary.md").read_text(encoding="utf-8").lower()
    for word in GLOSSARY_RULES:
        assert f"**{word.replace('toolcall', 'tool call')}**" in page, f"docs/glossary.md has no entry for {word}"


def async_classes_without_async_methods(root: Path = PACKAGE) -> list[str]:
    """`module.Class` for each public `Async*` class whose body has no public `async def`: the prefix is
    for asyncio APIs with a blocking twin (README's naming rule; asynchronous RL is "overlapped",
    docs/glossary.md)."""
    found = []
    for path in sorted(root.rglob("*.py")):
        if path.stem.startswith("_") and path.stem != "__init__":
            continue
        module = ".".join(path.relative_to(root.parent).with_suffix("").parts)
        for node in parse_file(path).body:
            if not (isinstance(node, ast.ClassDef) and re.match(r"Async[A-Z]", node.name)):
                continue
            methods = [n for n in node.body if isinstance(n, ast.AsyncFunctionDef) and not n.name.startswith("_")]
            if not methods:
                found.append(f"{module}.{node.name}")
    return found


def test_an_async_class_has_a_public_async_method():
    assert async_classes_without_async_methods() == [], (
        "an `Async*` class is an asyncio API: give it public `async def` methods, or rename it "
        "(asynchronous RL is `Overlapped*`, docs/glossary.md) and keep the old name as a deprecated alias"
    )


def test_the_async_rule_finds_a_blocking_async_class(tmp_path):
    package = tmp_path / "workbench"
    package.mkdir()
    (package / "mod.py").write_text(
        "class AsyncThing:\n    def take(self): ...\n    async def _inner(self): ...\n\n"
        "class AsyncGood:\n    async def get(self): ...\n\n"
        "class Asynchronous:\n    def run(self): ...\n"
    )
    assert async_classes_without_async_methods(package) == ["workbench.mod.AsyncThing"]

"""The public face of every package: what `__all__` names exists, is sorted, and costs little to import.

Lazy names go through `workbench._lazy.lazy_exports` alone, with a `TYPE_CHECKING` block that names
the same (module, name) pairs, so type checkers and editors see what runs.
"""

from __future__ import annotations

import ast
import importlib
import json
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest
from source_tree import parse_file

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = sorted(".".join(init.relative_to(ROOT).parent.parts) for init in (ROOT / "workbench").rglob("__init__.py"))
# What `import workbench` or any of its packages must not pull in (each costs seconds, some are extras).
HEAVY = ("torch", "transformers", "trl", "vllm", "ray", "ipywidgets")


def _init_tree(package: str) -> ast.Module:
    return parse_file(ROOT / package.replace(".", "/") / "__init__.py")


def _is_type_checking(test: ast.expr) -> bool:
    return isinstance(test, ast.Name) and test.id == "TYPE_CHECKING"


def _lazy_parts(package: str) -> tuple[set[tuple[str, str]], set[tuple[str, str]]] | None:
    """(module, name) pairs of the `TYPE_CHECKING` imports and of the `lazy_exports` map, or None
    for a package without lazy names."""
    for node in _init_tree(package).body:
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            mirror = {
                (imp.module or "", alias.name)
                for imp in node.body
                if isinstance(imp, ast.ImportFrom)
                for alias in imp.names
            }
            calls = [
                call
                for stmt in node.orelse
                for call in ast.walk(stmt)
                if isinstance(call, ast.Call) and getattr(call.func, "id", "") == "lazy_exports"
            ]
            assert len(calls) == 1, f"{package}: the `else:` of `if TYPE_CHECKING:` calls lazy_exports once"
            exports = ast.literal_eval(calls[0].args[1])
            return mirror, {(module, name) for module, names in exports.items() for name in names}
    return None


def _isort_key(name: str) -> tuple[int, str]:
    """ruff's order for `__all__` (RUF022): CONSTANTS, then Classes, then everything else."""
    group = 0 if name.isupper() else 1 if name[:1].isupper() else 2
    return group, name


@pytest.mark.parametrize("package", PACKAGES)
def test_all_is_sorted_and_unique(package):
    names = importlib.import_module(package).__all__
    assert list(names) == sorted(set(names), key=_isort_key), (
        f"{package}.__all__ is not sorted or repeats a name (`ruff check --fix` sorts it)"
    )


@pytest.mark.parametrize("package", PACKAGES)
def test_lazy_names_have_a_type_checking_mirror(package):
    tree = _init_tree(package)
    hand_rolled = [n.name for n in tree.body if isinstance(n, ast.FunctionDef) and n.name in ("__getattr__", "__dir__")]
    assert not hand_rolled, f"{package}: use workbench._lazy.lazy_exports, not a hand-written {hand_rolled}"
    parts = _lazy_parts(package)
    if parts is None:
        return
    mirror, lazy = parts
    assert mirror == lazy, f"{package}: TYPE_CHECKING imports and lazy_exports differ by {mirror ^ lazy}"
    exported = set(importlib.import_module(package).__all__)
    assert {name for _, name in lazy} <= exported, f"{package}: a lazy name missing from __all__"


@pytest.mark.parametrize("package", PACKAGES)
def test_every_exported_name_resolves_even_after_its_submodules_load(package):
    """A lazy name equal to a submodule's name would resolve to the module once that is imported."""
    module = importlib.import_module(package)
    for name in module.__all__:
        assert getattr(module, name) is not None, f"{package}.{name}"
    submodules = {info.name for info in pkgutil.iter_modules(module.__path__)}
    parts = _lazy_parts(package)
    clashes = sorted({name for _, name in parts[1]} & submodules) if parts else []
    assert not clashes, f"{package}: lazy names {clashes} equal submodule names; import them eagerly"


def test_importing_workbench_and_each_package_loads_nothing_heavy():
    """In a fresh interpreter, import `workbench` then each package in turn; the package whose import
    first brings in torch, transformers, trl, vLLM, Ray or ipywidgets is named."""
    code = (
        "import importlib, json, sys\n"
        f"heavy, culprits = {HEAVY!r}, {{}}\n"
        f"for package in {PACKAGES!r}:\n"
        "    importlib.import_module(package)\n"
        "    new = [m for m in heavy if m in sys.modules and not any(m in v for v in culprits.values())]\n"
        "    if new:\n"
        "        culprits[package] = new\n"
        "print(json.dumps(culprits))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout.strip().splitlines()[-1]) == {}

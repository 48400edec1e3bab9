"""The code keeps its shape: no function in `workbench/` runs over 60 lines.

A function's length is `end_lineno - lineno + 1` of its `ast` node (its body, docstring and decorators'
target line included; nested functions count toward their parent and on their own). A longer function
is split into named steps, so each part reads on one screen.
"""

from __future__ import annotations

import ast
from pathlib import Path

from source_tree import parse_file

MAX_LINES = 60
PACKAGE = Path(__file__).resolve().parents[1] / "workbench"


def long_functions(root: Path, limit: int) -> list[str]:
    """`path:line name (n lines)` for each function under `root` longer than `limit` lines."""
    found = []
    for path in sorted(root.rglob("*.py")):
        tree = parse_file(path)
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                if lines > limit:
                    found.append(f"{path.relative_to(root.parent)}:{node.lineno} {node.name} ({lines} lines)")
    return found


def test_the_walk_finds_a_long_function(tmp_path):
    """A 62-line function (def line, 60 body lines, return) is found; a 60-line one is not."""
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    body = "".join(f"    x{i} = {i}\n" for i in range(60))
    (pkg / "long.py").write_text(f"def long():\n{body}    return 0\n", encoding="utf-8")
    short = "".join(f"    x{i} = {i}\n" for i in range(58))
    (pkg / "short.py").write_text(f"async def short():\n{short}    return 0\n", encoding="utf-8")
    assert long_functions(pkg, MAX_LINES) == ["pkg/long.py:1 long (62 lines)"]


def test_no_function_in_workbench_is_over_60_lines():
    long = long_functions(PACKAGE, MAX_LINES)
    assert not long, f"split these into named steps (at most {MAX_LINES} lines each):\n" + "\n".join(long)


# Modules: at most MAX_MODULE_LINES lines, so a module is one idea a reader holds at once. A module
# listed here is one idea that runs longer: it may not grow past its ceiling, and a split must follow
# the line its reason draws. A module over the limit and not listed fails.
MAX_MODULE_LINES = 400
LONG_MODULES: dict[str, tuple[int, str]] = {
    "workbench/train/config.py": (530, "TrainConfig: one dataclass whose fields with their help are most of it"),
    "workbench/demo/config.py": (415, "DemoConfig: its fields with their help, then the presets built from it"),
    "workbench/store/store.py": (
        490,
        "the store's SQL in one class; the seam, if it grows: trajectories and their queries vs reward "
        "records, metrics and events",
    ),
    "workbench/kernel/async_kernel.py": (
        480,
        "one kernel's life cycle; the seam: execution and interrupts vs start-up and close",
    ),
    "workbench/configfile.py": (455, "the config idiom; the seam: value checks (check_value) vs the Config base"),
    "workbench/search/build.py": (
        450,
        "building a dense index; the seam: the sharded encoding workers vs filling, tuning and measuring it",
    ),
    "workbench/synth/loop.py": (450, "one synthesis episode's steps vs the batch run (run_synthesis, write_qa)"),
    "workbench/evolve/loop.py": (
        440,
        "the self-evolution loop; the seam: checkpoint state and typed entry points vs the iteration body",
    ),
    "workbench/widgets/viewer.py": (430, "one widget's Python API; the seam: its queries vs its navigation"),
    "workbench/search/dense.py": (420, "the FAISS retriever; the seam: index helpers vs DenseRetriever"),
}


def long_modules(root: Path, limit: int) -> dict[str, int]:
    """`{path: lines}` for each module under `root` longer than `limit` lines (path from `root`'s parent)."""
    found = {}
    for path in sorted(root.rglob("*.py")):
        lines = len(path.read_text(encoding="utf-8").splitlines())
        if lines > limit:
            found[path.relative_to(root.parent).as_posix()] = lines
    return found


def test_the_walk_finds_a_long_module(tmp_path):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "long.py").write_text("x = 1\n" * 401, encoding="utf-8")
    (pkg / "short.py").write_text("x = 1\n" * 400, encoding="utf-8")
    assert long_modules(pkg, MAX_MODULE_LINES) == {"pkg/long.py": 401}


def test_no_module_is_over_400_lines_unless_listed_with_its_reason():
    found = long_modules(PACKAGE, MAX_MODULE_LINES)
    unlisted = sorted(path for path in found if path not in LONG_MODULES)
    assert not unlisted, f"split these along their ideas (at most {MAX_MODULE_LINES} lines each): {unlisted}"
    grown = {path: (lines, LONG_MODULES[path][0]) for path, lines in found.items() if lines > LONG_MODULES[path][0]}
    assert not grown, f"past their ceilings (lines, ceiling): {grown}; split them along the seam their reason names"
    stale = sorted(path for path in LONG_MODULES if path not in found)
    assert not stale, f"now within {MAX_MODULE_LINES} lines: drop them from LONG_MODULES: {stale}"
    assert all(reason.strip() for _ceiling, reason in LONG_MODULES.values())

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

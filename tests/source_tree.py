"""Parse workbench's own source with `ast`, safely beside other threads that parse too.

CPython 3.11 keeps the depth counter that `ast.parse` balances while it builds the tree in interpreter-wide
state, not per thread, so a parse running in another thread of the same process at that moment (an xdist
worker keeps the threads of earlier tests) can make this one fail with `SystemError: AST constructor
recursion depth mismatch`. The parse is pure, so it is simply run again.
"""

from __future__ import annotations

import ast
from pathlib import Path

ATTEMPTS = 5


def parse_file(path: Path) -> ast.Module:
    """The module `path` holds, as an `ast.Module`."""
    source = path.read_text(encoding="utf-8")
    for attempt in range(ATTEMPTS):
        try:
            return ast.parse(source, filename=str(path))
        except SystemError:  # another thread's parse moved the shared depth counter
            if attempt == ATTEMPTS - 1:
                raise
    raise AssertionError("unreachable")

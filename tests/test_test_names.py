"""Test files need unique basenames: pytest imports each as a top-level module named after its file (no
packages under tests/), so a second `test_x.py` in another folder fails at collection in a full run."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

TESTS = Path(__file__).resolve().parent


def test_no_two_test_files_share_a_name() -> None:
    where: dict[str, list[str]] = defaultdict(list)
    for path in TESTS.rglob("*.py"):
        if path.name != "conftest.py" and ".venv" not in path.parts:
            where[path.name].append(str(path.relative_to(TESTS)))
    clashes = {name: paths for name, paths in where.items() if len(paths) > 1}
    assert clashes == {}, f"rename one of each pair (pytest imports them by basename): {clashes}"

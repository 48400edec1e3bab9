"""MkDocs hook: the Tutorials section is the notebooks of `notebooks/`, rendered by mkdocs-jupyter.

Each page comes from the executed copy the test suite writes to `docs/tutorials/executed/` (`make test`; the
copy opens with a "smoke size, <commit>" banner), else from the source notebook under a banner saying it was
not executed in this build. Before the files are collected, the chosen notebooks are written to
`docs/tutorials/<name>.ipynb` (gitignored), the pages the nav names. Nothing is executed here.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = ROOT / "notebooks"
PAGES = ROOT / "docs" / "tutorials"
EXECUTED = PAGES / "executed"
NOT_EXECUTED = (
    "> **Not executed in this build.** `make test` runs every notebook at smoke size and writes the executed "
    "copies this page is rendered from; build the docs after it (`make docs`) to see the outputs."
)


def tutorials() -> list[Path]:
    """The notebooks the site renders (a leading `_` marks a test helper, not a tutorial)."""
    return sorted(p for p in NOTEBOOKS.glob("*.ipynb") if not p.name.startswith("_"))


def page_for(source: Path) -> dict[str, Any]:
    """The notebook a tutorial page is rendered from: the executed copy, else the source under its banner."""
    executed = EXECUTED / source.name
    if executed.is_file():
        return json.loads(executed.read_text(encoding="utf-8"))
    nb = json.loads(source.read_text(encoding="utf-8"))
    nb["cells"].insert(0, {"cell_type": "markdown", "metadata": {}, "source": [NOT_EXECUTED]})
    return nb


def on_config(config: Any) -> Any:
    for source in tutorials():
        (PAGES / source.name).write_text(json.dumps(page_for(source), indent=1), encoding="utf-8")
    return config

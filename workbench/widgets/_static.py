"""The front-end files under `static/`, joined into one ES module per widget.

Each widget's JS is a few small files (plain function definitions) concatenated in order; the
last file ends with `export default {...}`. The offline report inlines the same files without
that line, so the notebook and the report run one code path.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

STATIC = Path(__file__).parent / "static"
BUNDLES = {
    "viewer": (
        "util.js",
        "viewer_list.js",
        "viewer_calls.js",
        "viewer_turns.js",
        "viewer_panels.js",
        "viewer_group.js",
        "viewer.js",
    ),
    "figures": ("figures.js",),
}


@cache
def bundle(name: str, *, module: bool = True) -> str:
    """The JS of bundle `name`; with `module=False`, without its `export` line (for inlining)."""
    text = "\n".join((STATIC / f).read_text(encoding="utf-8") for f in BUNDLES[name])
    if not module:
        text = "\n".join(line for line in text.splitlines() if not line.startswith("export "))
    return text


@cache
def css(name: str) -> str:
    return (STATIC / f"{name}.css").read_text(encoding="utf-8")

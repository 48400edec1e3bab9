"""Write environment.yml from pyproject.toml so conda users get the same pins.

    python scripts/gen_environment_yml.py     # rewrites environment.yml
"""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def render() -> str:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    deps = project["dependencies"] + project["optional-dependencies"]["dev"]
    lines = [
        "# Generated from pyproject.toml by scripts/gen_environment_yml.py; tests/test_packaging.py keeps it in step.",
        "# conda env create -f environment.yml && conda activate workbench && pip install -e . --no-deps",
        "# bubblewrap comes from the system (apt install bubblewrap); it is not on conda-forge for all platforms.",
        "name: workbench",
        "channels:",
        "  - conda-forge",
        "dependencies:",
        "  - python=3.11",
        "  - pip",
        "  - pip:",
    ]
    lines += [f"      - {d}" for d in deps]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    (ROOT / "environment.yml").write_text(render())
    sys.exit(0)

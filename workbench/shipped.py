"""Where the files workbench ships beside its code live: the sandbox profiles and the kernelspec.

    shipped_dir("sandbox/profiles")   # the TOML profiles
    shipped_dir("kernels")            # kernels/workbench-sandboxed/kernel.json

One source: the top-level `sandbox/` and `kernels/` folders of the repository. A checkout (or an editable
install) reads them there; a built wheel carries a copy under `workbench/_shipped/`, made by `setup.py`
when the wheel is built, so an installed workbench finds the same files without the repository.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

Shipped = Literal["sandbox/profiles", "kernels"]
SHIPPED: tuple[Shipped, ...] = ("sandbox/profiles", "kernels")
"""The folders shipped as package data, as paths relative to the repository root."""
PACKAGE = Path(__file__).resolve().parent
INSTALLED = PACKAGE / "_shipped"
"""Where a wheel carries the shipped folders (absent in a checkout)."""


def shipped_dir(name: Shipped) -> Path:
    """The folder `name` (one of `SHIPPED`): the wheel's copy when installed, else the repository's."""
    if name not in SHIPPED:
        raise ValueError(f"{name!r} is not shipped; shipped folders: {', '.join(SHIPPED)}")
    installed = INSTALLED / name
    return installed if installed.is_dir() else PACKAGE.parent / name


__all__ = ["INSTALLED", "SHIPPED", "Shipped", "shipped_dir"]

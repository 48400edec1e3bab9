"""The old name of `workbench.sandbox.kernel_dirs` (a deprecated module, kept one release): a rollout is
an episode played through the model gateway (docs/glossary.md); a kernel's directory is a kernel dir."""

from __future__ import annotations

import warnings
from typing import Any

from workbench.sandbox import kernel_dirs


def __getattr__(name: str) -> Any:
    if name.startswith("__"):
        raise AttributeError(name)
    warnings.warn(
        f"workbench.sandbox.rollout.{name}: the module is workbench.sandbox.kernel_dirs now", DeprecationWarning, 2
    )
    return getattr(kernel_dirs, name)

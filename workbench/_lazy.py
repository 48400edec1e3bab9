"""Lazy exports for a package `__init__` (PEP 562): a name is imported from its module on first use.

The one idiom for a package whose public names would pull in something heavy (torch, TRL, Ray,
ipywidgets) or a higher layer. The `TYPE_CHECKING` block is what type checkers and editors read;
the map is what runs; `tests/test_public_api.py` checks that both name the same (module, name) pairs:

    from typing import TYPE_CHECKING

    from workbench._lazy import lazy_exports

    if TYPE_CHECKING:
        from workbench.train.trainer import WorkbenchGRPOTrainer
    else:
        __getattr__, __dir__ = lazy_exports(__name__, {"workbench.train.trainer": ["WorkbenchGRPOTrainer"]})

    __all__ = ["WorkbenchGRPOTrainer"]

A lazy name must not equal a submodule's name: once the submodule is imported, Python binds the
module to that attribute and the lazy name is never looked up (import such a name eagerly).
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any


def lazy_exports(
    package: str, exports: Mapping[str, Sequence[str]]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """`(__getattr__, __dir__)` for `package`: each name in `exports[module]` is imported from
    `module` on first access and kept in the package's namespace, so later reads cost nothing."""
    where: dict[str, str] = {}
    for module, names in exports.items():
        for name in names:
            if name in where:
                raise ValueError(f"{package}: lazy name {name!r} is mapped to both {where[name]} and {module}")
            where[name] = module
    namespace = sys.modules[package].__dict__

    def __getattr__(name: str) -> Any:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *where})

    return __getattr__, __dir__


def moved_names(module: str, moved: Mapping[str, str]) -> Callable[[str], Any]:
    """A module's `__getattr__` for names that moved: `moved` maps each old name to "new.module:NewName"; reading
    one warns (`DeprecationWarning`) and returns the object from its new home, imported then.

        __getattr__ = moved_names(__name__, {"ToolCall": "workbench.trajectory:HostCall"})
    """

    def __getattr__(name: str) -> Any:
        target = moved.get(name)
        if target is None:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        home, _, new = target.partition(":")
        import warnings

        warnings.warn(f"{module}.{name} is now {home}.{new}", DeprecationWarning, stacklevel=2)
        return getattr(importlib.import_module(home), new)

    return __getattr__

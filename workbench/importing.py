"""The object a `MODULE:NAME` spec names, or a `ConfigError` that says how to fix the spec.

    agent = import_target("my_pkg.agents:solve", where="--harness", wants="an agent(rollout) function")

One reading of the spec for every place that takes one (`--harness`, `openenv:MODULE:Class`, Ray tool and
policy factories): the spec must have both parts; the module must import; each dotted part of NAME must exist;
the object must be callable.
"""

from __future__ import annotations

import importlib
from typing import Any

from workbench.errors import ConfigError

__all__ = ["import_target"]

SYS_PATH_HINT = "put it on sys.path (PYTHONPATH, or pip install the package that holds it)"


def import_target(
    spec: str, *, where: str, wants: str, form: str = "MODULE:NAME", example: str = "my_pkg.module:name", hint: str = ""
) -> Any:
    """The callable `spec` ("package.module:attr.sub") names. `where` opens each message (e.g. "--harness
    'x:y'"), `wants` says what was expected (e.g. "an agent(rollout) function"), `form` how the spec is written,
    `hint` replaces the sys.path hint of an import that fails."""
    module_name, sep, attr = spec.strip().partition(":")
    if not sep or not module_name or not attr:
        raise ConfigError(f"{where}: write {form} naming {wants}, e.g. {example}")
    try:
        found: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise ConfigError(f"{where}: cannot import {module_name} ({exc}); {hint or SYS_PATH_HINT}") from exc
    for part in attr.split("."):
        found = getattr(found, part, None)
        if found is None:
            raise ConfigError(f"{where}: {module_name} has no attribute {attr!r}; name {wants}")
    if not callable(found):
        raise ConfigError(
            f"{where}: {module_name}.{attr} is not callable (its type is {type(found).__name__}); name {wants}"
        )
    return found

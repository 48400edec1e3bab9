"""The caller's registrations, carried by value into every process it launches.

    from workbench.registrations import carry, install

    payload = carry()        # in the parent: every registration made here, cloudpickled one by one
    install(payload)         # in the child, before any name resolves: the same names, the same objects

A registration is a name → object entry in one of workbench's open registries (estimators, reward
components, policy backends, scripted policies, tool sets, env sources). Each registry reports the
ones made through its public `register_*` function or decorator to `record(kind, name, value,
install)`, where `install(name, value)` is the registry's own (module-level) function that makes
it again; built-ins are never recorded, every process makes its own. `launch()`'s child, the Ray
kernel workers and anything else that starts a process of workbench's hands `carry()` to it, so an
estimator, reward, policy backend, tool set or env source defined in a notebook cell (or under a
script's `if __name__ == "__main__":`) resolves there as it does here.

cloudpickle copies what is defined in `__main__` (a notebook cell, a script) by value and what lives
in an importable module by reference (the child imports that module). A registration that cannot be
copied (it holds a lock, an open file, socket or client) is refused by `carry()` with a
`ConfigError` naming it and why; one whose module the child cannot import is refused by `install()`.
"""

from __future__ import annotations

import pickle
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from workbench.errors import ConfigError

Installer = Callable[[str, Any], object]
_FIX = (
    "build what it holds inside the function when it is called, or register a module-level object from a "
    "plugin module (--plugin MODULE, importable in every process)"
)


@dataclass(frozen=True)
class Registration:
    """One registration as recorded: its registry's `kind` ("estimator", "tool set" …), the `name` it
    resolves under, the registered `value`, and `install(name, value)`, which registers it again."""

    kind: str
    name: str
    value: Any
    install: Installer


_MADE: dict[tuple[str, str], Registration] = {}


def record(kind: str, name: str, value: Any, install: Installer) -> None:
    """Called by a registry for each registration made through its public API (a later one under the
    same kind and name replaces the earlier, as in the registry)."""
    _MADE.pop((kind, name), None)
    _MADE[(kind, name)] = Registration(kind, name, value, install)


def registrations() -> list[Registration]:
    """The registrations made in this process, in order (installed ones included)."""
    return list(_MADE.values())


def carry() -> bytes:
    """This process's registrations as one payload for `install` in another process; a `ConfigError`
    names a registration that cannot be copied and why."""
    import cloudpickle

    entries = []
    for reg in _MADE.values():
        try:
            blob = cloudpickle.dumps((reg.install, reg.value))
        except Exception as exc:  # cloudpickle raises TypeError, PicklingError, AttributeError …
            raise ConfigError(
                f"the {reg.kind} registration {reg.name!r} ({_label(reg.value)}) cannot be carried to a child "
                f"process: {type(exc).__name__}: {exc}. Something it holds cannot be copied (a lock, an open "
                f"file, socket or client); {_FIX}"
            ) from exc
        entries.append((reg.kind, reg.name, blob))
    return pickle.dumps(entries)


def install(payload: bytes) -> list[str]:
    """Register, in this process, every registration of a `carry()` payload; returns "kind name" for each.
    Built-ins stay; a carried registration replaces this process's own under the same name."""
    done = []
    for kind, name, blob in pickle.loads(payload):
        try:
            installer, value = pickle.loads(blob)
        except Exception as exc:  # a module this process cannot import, a class that changed …
            raise ConfigError(
                f"the {kind} registration {name!r} could not be rebuilt in this process: "
                f"{type(exc).__name__}: {exc}. Make the module that defines it importable here (PYTHONPATH, "
                "or installed on every node of a cluster), or define it in the notebook or main script"
            ) from exc
        installer(name, value)
        done.append(f"{kind} {name}")
    return done


def _label(value: Any) -> str:
    module = getattr(value, "__module__", None) or type(value).__module__
    return f"{module}.{getattr(value, '__qualname__', type(value).__qualname__)}"


__all__ = ["Installer", "Registration", "carry", "install", "record", "registrations"]

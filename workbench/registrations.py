"""The caller's registrations, carried by value into every process it launches.

    from workbench.registrations import carry, install_carried

    payload = carry()         # in the parent: every registration made here, cloudpickled one by one
    install_carried(payload)  # in the child, before any name resolves: the same names, the same objects

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
copied (it holds a lock, an open file, socket or client), or whose module the child cannot import,
does not stop the others: the child records why, and a lookup of that name there fails with a
`ConfigError` that names it and why (each registry's unknown-name error adds `why_missing`), so a
run fails only for what it uses. `carry(strict=True)` raises that error at once instead.
"""

from __future__ import annotations

import pickle
from collections.abc import Callable, Iterable
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


_MISSING: dict[tuple[str, str], str] = {}  # (kind, name) -> why a carried registration did not arrive here


def carry(*, strict: bool = False) -> bytes:
    """This process's registrations as one payload for `install_carried` in another process. One that cannot be copied
    travels as its reason (the child's lookup of it says why), or with `strict` is a `ConfigError` here."""
    import cloudpickle

    entries: list[tuple[str, str, bytes | None, str]] = []
    for reg in _MADE.values():
        try:
            entries.append((reg.kind, reg.name, cloudpickle.dumps((reg.install, reg.value)), ""))
        except Exception as exc:  # cloudpickle raises TypeError, PicklingError, AttributeError …
            why = (
                f"could not be copied out of the process that made it ({_label(reg.value)}: "
                f"{type(exc).__name__}: {exc}): something it holds cannot be copied (a lock, an open file, socket or "
                f"client); {_FIX}"
            )
            if strict:
                raise ConfigError(f"the {reg.kind} registration {reg.name!r} {why}") from exc
            entries.append((reg.kind, reg.name, None, why))
    return pickle.dumps(entries)


def install_carried(payload: bytes) -> list[str]:
    """Register, in this process, every registration of a `carry()` payload; returns "kind name" for each made.
    Built-ins stay; a carried registration replaces this process's own under the same name. One that did not
    travel, or cannot be rebuilt here, is left out with its reason (`why_missing`, `missing`)."""
    done = []
    for kind, name, blob, why in pickle.loads(payload):
        if blob is not None:
            try:
                installer, value = pickle.loads(blob)
            except Exception as exc:  # a module this process cannot import, a class that changed …
                why = (
                    f"could not be rebuilt in this process ({type(exc).__name__}: {exc}); make the module that "
                    "defines it importable here (PYTHONPATH, or installed on every node of a cluster), or define it "
                    "in the notebook or main script"
                )
            else:
                installer(name, value)
                _MISSING.pop((kind, name), None)
                done.append(f"{kind} {name}")
                continue
        _MISSING[(kind, name)] = why
    return done


def missing() -> dict[str, str]:
    """Each carried registration that did not arrive in this process, as {"kind name": why}."""
    return {f"{kind} {name}": why for (kind, name), why in _MISSING.items()}


def why_missing(kind: str, name: str) -> str:
    """For a registry's unknown-name error: why the caller's registration of `name` is not here, or ""."""
    why = _MISSING.get((kind, name))
    return f" The {kind} registration {name!r} of the process that launched this one {why}." if why else ""


def load_plugins(modules: Iterable[str]) -> None:
    """Import each plugin module and call its `register()`, which makes its registrations (`--plugin MODULE`;
    kept in this low layer so a config's own list of plugins can be loaded wherever the config resolves names)."""
    import importlib

    for name in modules:
        try:
            module = importlib.import_module(name)
        except ImportError as exc:
            raise ConfigError(
                f"--plugin {name}: cannot import it ({exc}); give a module on sys.path (PYTHONPATH), "
                "e.g. --plugin my_project.workbench_plugins"
            ) from exc
        register_plugin = getattr(module, "register", None)
        if not callable(register_plugin):
            raise ConfigError(
                f"--plugin {name}: the module has no register() function; define one that makes your "
                "registrations (@estimator, @reward, register_backend, register_tool_set, register_env_source, "
                "register_harness …)"
            )
        register_plugin()


def _label(value: Any) -> str:
    module = getattr(value, "__module__", None) or type(value).__module__
    return f"{module}.{getattr(value, '__qualname__', type(value).__qualname__)}"


__all__ = [
    "Installer",
    "Registration",
    "carry",
    "install_carried",
    "load_plugins",
    "missing",
    "record",
    "registrations",
    "why_missing",
]

"""Harnesses by name: an open registry, and `resolve_harness` for a spec from a config or a shell.

    from workbench.gateway.harnesses import harness, register_harness, resolve_harness

    @harness("my_agent")                      # or register_harness("my_agent", agent)
    async def agent(r): ...                   # agent(rollout): async or plain (see HarnessEpisodes)

    resolve_harness("my_agent")               # the registered agent
    resolve_harness("my_pkg.agents:solve")    # MODULE:FUNCTION, imported

`TrainConfig.harness` and `workbench run|eval|train --harness SPEC` resolve through here. Like estimators,
rewards, tool sets and env sources, a registration made in a notebook cell is carried into the processes a
run launches (`workbench.registrations`), and a plugin module (`--plugin MODULE`) can make one with
`register_harness` in its `register()`. Nothing is registered on import; there are no built-ins.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from workbench.errors import ConfigError
from workbench.gateway.episodes import HarnessAgent
from workbench.importing import import_target
from workbench.registrations import record, why_missing

__all__ = ["HARNESS_SPEC_HELP", "harness", "harness_names", "register_harness", "resolve_harness"]

HARNESS_SPEC_HELP = (
    "MODULE:FUNCTION (an agent(rollout) function importable here, e.g. my_pkg.agents:solve) or a name registered "
    "with workbench.gateway.register_harness(name, agent) / @harness(name) (from a plugin: --plugin MODULE)"
)
_A = TypeVar("_A", bound=Callable[..., object])
_HARNESSES: dict[str, HarnessAgent] = {}


def register_harness(name: str, agent: HarnessAgent, *, replace: bool = True) -> HarnessAgent:
    """Make `resolve_harness(name)` (and `--harness NAME`, `TrainConfig(harness=NAME)`) give `agent`."""
    if not isinstance(name, str) or not name or ":" in name or any(c.isspace() for c in name):
        raise ConfigError(f"harness name {name!r}: use a non-empty name without ':' or spaces, e.g. 'my_agent'")
    if not callable(agent):
        raise ConfigError(f"harness {name!r} must be callable as agent(rollout), got {agent!r}")
    if not replace and name in _HARNESSES:
        raise ConfigError(f"a harness named {name!r} is already registered")
    _HARNESSES[name] = agent
    record("harness", name, agent, _install)
    return agent


def _install(name: str, agent: HarnessAgent) -> None:
    register_harness(name, agent)


def harness(name: str) -> Callable[[_A], _A]:
    """Decorator form of `register_harness`: `@harness("my_agent")` over `agent(rollout)`."""

    def register(agent: _A) -> _A:
        register_harness(name, agent)
        return agent

    return register


def harness_names() -> list[str]:
    """The registered harness names."""
    return sorted(_HARNESSES)


def resolve_harness(spec: str, *, where: str = "harness") -> HarnessAgent:
    """The agent `spec` names: "MODULE:FUNCTION", imported, or a registered name; else a `ConfigError` naming the fix.
    `where` prefixes the message (e.g. "--harness", "TrainConfig.harness")."""
    text = spec.strip() if isinstance(spec, str) else ""
    if not text:
        raise ConfigError(f"{where}: empty; give {HARNESS_SPEC_HELP}")
    if ":" not in text:
        if text not in _HARNESSES:
            known = ", ".join(harness_names()) or "none"
            raise ConfigError(
                f"{where} {text!r}: no harness is registered under that name (registered: {known}); give "
                f"{HARNESS_SPEC_HELP}" + why_missing("harness", text)
            )
        return _HARNESSES[text]
    return import_target(
        text,
        where=f"{where} {text!r}",
        wants="an agent(rollout) function (async or plain)",
        form="MODULE:FUNCTION",
        example="my_pkg.agents:solve",
    )

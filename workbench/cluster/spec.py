"""Recipes that travel to cluster workers: what to build there, never the secrets it needs.

    tools = ToolsSpec("workbench.resolve:load_search_tool", corpus="/data/corpus.jsonl")
    web = ToolsSpec("mylab.tools:web_search", env={"api_key": "SERPER_API_KEY"})
    policy = PolicySpec("openai:http://gpu-node:8000/v1", env={"api_key": "OPENAI_API_KEY"})

A spec names a factory (`"module:function"`, importable on every worker) and plain keyword
arguments. `env` maps a keyword to the name of an environment variable that each worker reads
when it builds the object: secrets stay in the workers' environment (set where `ray start` ran),
never in a spec, a job or a trajectory. A keyword whose name looks like a secret (`api_key`,
`token`, `password`, ...) is refused with the `env=` form to use instead.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Union

from workbench.errors import ConfigError

if TYPE_CHECKING:
    from workbench.agent.local import ToolSet
    from workbench.policies.base import Policy

_SECRET = re.compile(r"(key|token|secret|password|passwd|credential|auth)", re.IGNORECASE)


def _check(where: str, kwargs: Mapping[str, Any], env: Mapping[str, str]) -> None:
    for name in kwargs:
        if _SECRET.search(str(name)):
            raise ConfigError(
                f"{where}: keyword {name!r} looks like a secret, and a spec travels to every worker; "
                f"pass env={{{name!r}: 'ENV_VAR_NAME'}} so each worker reads it from its own environment"
            )
    for name, var in env.items():
        if not isinstance(var, str) or not var:
            raise ConfigError(f"{where}: env[{name!r}] must name an environment variable, got {var!r}")
        if name in kwargs:
            raise ConfigError(f"{where}: {name!r} is both a keyword and in env=; give it once")


def _from_env(where: str, env: Mapping[str, str]) -> dict[str, str]:
    values = {}
    for name, var in env.items():
        if var not in os.environ:
            raise ConfigError(
                f"{where}: environment variable {var} (for {name!r}) is not set on this "
                "worker; export it where `ray start` runs on every node"
            )
        values[name] = os.environ[var]
    return values


def import_object(path: str) -> Any:
    """`"package.module:attr"` → the attribute (a factory run on each worker)."""
    from workbench.importing import import_target

    return import_target(
        path,
        where=f"factory {path!r}",
        wants="a factory function",
        form="module:function",
        example="workbench.resolve:load_search_tool",
        hint="is workbench (and that module) installed on every node of the cluster?",
    )


@dataclass(frozen=True)
class ToolsSpec:
    """A tool set built on each worker: `factory(**kwargs, **secrets from env)` returns a
    `ToolRegistry`, or a function `task -> ToolRegistry` (tools bound to each task)."""

    factory: str | Callable[..., Any]
    kwargs: Mapping[str, Any] = field(default_factory=dict)
    env: Mapping[str, str] = field(default_factory=dict)

    def __init__(
        self, factory: str | Callable[..., Any], *, env: Mapping[str, str] | None = None, **kwargs: Any
    ) -> None:
        object.__setattr__(self, "factory", factory)
        object.__setattr__(self, "kwargs", dict(kwargs))
        object.__setattr__(self, "env", dict(env or {}))
        _check(f"ToolsSpec({self.label})", self.kwargs, self.env)

    @property
    def label(self) -> str:
        return self.factory if isinstance(self.factory, str) else getattr(self.factory, "__qualname__", "?")

    def build(self) -> ToolSet:
        """Run on the worker: the tool set."""
        fn = import_object(self.factory) if isinstance(self.factory, str) else self.factory
        return fn(**self.kwargs, **_from_env(f"ToolsSpec({self.label})", self.env))


@dataclass(frozen=True)
class PolicySpec:
    """A policy built on each worker for whole-episode runs: `load_policy(spec, **kwargs, **env)`,
    e.g. `PolicySpec("openai:http://host:8000/v1")` for `workbench serve-model` or `vllm serve`."""

    spec: str
    kwargs: Mapping[str, Any] = field(default_factory=dict)
    env: Mapping[str, str] = field(default_factory=dict)

    def __init__(self, spec: str, *, env: Mapping[str, str] | None = None, **kwargs: Any) -> None:
        if not isinstance(spec, str) or (":" not in spec and spec.strip() != "scripted"):
            raise ConfigError(f"PolicySpec takes a policy spec like 'openai:http://host:8000/v1', got {spec!r}")
        object.__setattr__(self, "spec", spec)
        object.__setattr__(self, "kwargs", dict(kwargs))
        object.__setattr__(self, "env", dict(env or {}))
        _check(f"PolicySpec({spec})", self.kwargs, self.env)

    def build(self) -> Policy:
        """Run on the worker: the policy (scripted solvers registered, as the CLI does)."""
        from workbench.resolve import resolve_policy

        kwargs = {**self.kwargs, **_from_env(f"PolicySpec({self.spec})", self.env)}
        return resolve_policy(self.spec, **kwargs)


WorkerTools = Union["ToolSet", ToolsSpec]  # a tool set as sent to workers: built here, or a recipe built there
WorkerPolicy = Union["Policy", PolicySpec]  # a policy as sent to workers: pickled, or a recipe built there


def policy_for_workers(policy: WorkerPolicy | str) -> WorkerPolicy:
    """What a whole-episode worker gets for `policy`: a spec string becomes a `PolicySpec`; a policy
    object travels as it is (pickled), unless it carries a credential."""
    if isinstance(policy, str):
        return PolicySpec(policy)
    if isinstance(policy, PolicySpec):
        return policy
    if getattr(policy, "headers", None):
        raise ConfigError(
            f"{type(policy).__name__} carries request headers (an API key?) that would travel to every "
            "worker; pass PolicySpec('openai:URL', env={'api_key': 'ENV_VAR'}) instead"
        )
    return policy


__all__ = ["PolicySpec", "ToolsSpec", "WorkerPolicy", "WorkerTools", "import_object", "policy_for_workers"]

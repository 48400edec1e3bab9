"""`load_policy(spec)`: build a policy from a short string, as the CLI's `--policy` takes it.

    load_policy("scripted")                     # the scripted policy registered as "default"
    load_policy("scripted:echo")                # a named scripted policy
    load_policy("transformers:runs/tiny", device="cpu")       # a local model directory
    load_policy("transformers:Qwen/Qwen2.5-0.5B-Instruct@main") # a hub id [@revision], via the HF cache
    load_policy("transformers:smollm2")                         # a model `workbench models add` converted
    load_policy("openai:http://127.0.0.1:8000/v1", tokenizer="runs/tiny")
    load_policy("vllm:/models/Qwen3-4B", gpu_memory_utilization=0.5)

A spec is `BACKEND[:ARG]`; for `transformers` and `vllm` the ARG is any model spec that
`workbench.models.resolve_model` takes (a hub id, a local directory, a GGUF file, a short name).
Keyword arguments go to the backend. Backends are an open registry: your own one is named on the
CLI (`--policy mine:ARG`) once your code has registered it:

    register_backend("mine", lambda arg, **kwargs: MyPolicy(arg, **kwargs))

Scripted policies are registered by name by the code that defines them (nothing registers on
import; `workbench.resolve` registers the world solvers):

    register_scripted("default", lambda: ScriptedPolicy.from_turns([...]))
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from workbench.errors import ConfigError
from workbench.policies.base import Policy
from workbench.registrations import record, why_missing


class PolicyBackend(Protocol):
    """Builds a policy from the ARG of `BACKEND:ARG` ("" when the spec has none) and keywords."""

    def __call__(self, arg: str, **kwargs: Any) -> Policy: ...


_SCRIPTED: dict[str, Callable[..., Policy]] = {}
_BACKENDS: dict[str, PolicyBackend] = {}
_BUILTINS_ADDED = False


def register_scripted(name: str, factory: Callable[..., Policy], *, replace: bool = True) -> None:
    """Make `load_policy("scripted:NAME")` return `factory(**kwargs)`. NAME "default" is what
    a bare `"scripted"` resolves to."""
    if not name or ":" in name:
        raise ConfigError(f"scripted policy name {name!r} must be non-empty and contain no ':'")
    if not replace and name in _SCRIPTED:
        raise ConfigError(f"a scripted policy named {name!r} is already registered")
    _SCRIPTED[name] = factory
    record("scripted policy", name, factory, register_scripted)


def scripted_names() -> list[str]:
    return sorted(_SCRIPTED)


def register_backend(name: str, backend: PolicyBackend, *, replace: bool = True) -> None:
    """Make `load_policy("NAME:ARG", **kwargs)` return `backend(ARG, **kwargs)`."""
    if not isinstance(name, str) or not name.isidentifier():
        raise ConfigError(f"policy backend name {name!r} must be an identifier such as 'my_backend'")
    if not callable(backend):
        raise ConfigError(f"policy backend {name!r} must be callable as backend(arg, **kwargs) -> Policy")
    builtin_backends()
    if not replace and name.lower() in _BACKENDS:
        raise ConfigError(f"a policy backend named {name!r} is already registered")
    _BACKENDS[name.lower()] = backend
    record("policy backend", name.lower(), backend, register_backend)


def backend_names() -> list[str]:
    builtin_backends()
    return sorted(_BACKENDS)


def load_policy(spec: str, **kwargs: Any) -> Policy:
    """Parse `BACKEND[:ARG]` and build the policy (see the module docstring)."""
    if not isinstance(spec, str) or not spec.strip():
        raise ConfigError(f"policy spec must be a string like 'transformers:MODEL'; choices: {_choices()}")
    kind, _, arg = spec.strip().partition(":")
    kind = kind.lower()
    builtin_backends()
    if kind not in _BACKENDS:
        raise ConfigError(
            f"unknown policy backend {kind!r} in {spec!r}; choices: {_choices()}. Register your own with "
            "workbench.policies.register_backend(name, lambda arg, **kwargs: MyPolicy(...)) before the lookup"
            + why_missing("policy backend", kind)
        )
    return _BACKENDS[kind](arg, **kwargs)


def _choices() -> str:
    described = {"scripted": "scripted[:NAME]", "transformers": "transformers:MODEL", "openai": "openai:URL"}
    described["vllm"] = "vllm:MODEL"
    return ", ".join(described.get(name, f"{name}:ARG") for name in backend_names())


def _needs(kind: str, arg: str, what: str) -> None:
    if not arg:
        hint = (
            " (a hub id ORG/NAME[@REV], a local dir, a GGUF file or a `workbench models` name)"
            if what == "MODEL"
            else ""
        )
        raise ConfigError(f"policy spec {kind!r} needs a {what}: write '{kind}:{what}'{hint}")


def _scripted(arg: str, **kwargs: Any) -> Policy:
    name = arg or "default"
    if name not in _SCRIPTED:
        known = ", ".join(f"scripted:{n}" for n in scripted_names()) or "none yet"
        raise ConfigError(
            f"no scripted policy named {name!r} (registered: {known}). Register one with "
            "workbench.policies.register_scripted(name, factory); workbench.resolve.resolve_policy "
            "registers the world solvers (default, world, coder)" + why_missing("scripted policy", name)
        )
    return _SCRIPTED[name](**kwargs)


def _transformers(arg: str, **kwargs: Any) -> Policy:
    _needs("transformers", arg, "MODEL")
    from workbench.policies.hf import TransformersPolicy

    return TransformersPolicy(arg, **kwargs)


def _openai(arg: str, **kwargs: Any) -> Policy:
    _needs("openai", arg, "URL")
    from workbench.policies.openai_compat import OpenAIPolicy

    return OpenAIPolicy(arg, **kwargs)


def _vllm(arg: str, **kwargs: Any) -> Policy:
    _needs("vllm", arg, "MODEL")
    from workbench.policies.vllm_engine import VLLMPolicy

    return VLLMPolicy(arg, **kwargs)


def builtin_backends() -> None:
    """Register the built-in backends (scripted, transformers, openai, vllm); runs once, from the
    first lookup or registration, so importing this module registers nothing."""
    global _BUILTINS_ADDED
    if _BUILTINS_ADDED:
        return
    _BUILTINS_ADDED = True
    for name, backend in (
        ("scripted", _scripted),
        ("transformers", _transformers),
        ("openai", _openai),
        ("vllm", _vllm),
    ):
        _BACKENDS.setdefault(name, backend)


__all__ = [
    "PolicyBackend",
    "backend_names",
    "builtin_backends",
    "load_policy",
    "register_backend",
    "register_scripted",
    "scripted_names",
]

"""`load_policy(spec)`: build a policy from a short string, as the CLI's `--policy` takes it.

    load_policy("scripted")                     # the scripted policy registered as "default"
    load_policy("scripted:echo")                # a named scripted policy
    load_policy("transformers:runs/tiny", device="cpu")
    load_policy("openai:http://127.0.0.1:8000/v1", tokenizer="runs/tiny")
    load_policy("vllm:/models/Qwen3-4B", gpu_memory_utilization=0.5)

Keyword arguments go to the backend's constructor. Scripted policies are registered by name
by the layers that define them:

    register_scripted("default", lambda: ScriptedPolicy.from_turns([...]))
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from workbench.errors import ConfigError
from workbench.policies.base import Policy

_SCRIPTED: dict[str, Callable[[], Policy]] = {}

KINDS = ("scripted", "transformers", "openai", "vllm")


def register_scripted(name: str, factory: Callable[..., Policy], *, replace: bool = True) -> None:
    """Make `load_policy("scripted:NAME")` return `factory(**kwargs)`. NAME "default" is what
    a bare `"scripted"` resolves to."""
    if not name or ":" in name:
        raise ConfigError(f"scripted policy name {name!r} must be non-empty and contain no ':'")
    if not replace and name in _SCRIPTED:
        raise ConfigError(f"a scripted policy named {name!r} is already registered")
    _SCRIPTED[name] = factory


def scripted_names() -> list[str]:
    return sorted(_SCRIPTED)


def load_policy(spec: str, **kwargs: Any) -> Policy:
    """Parse `KIND[:ARG]` and build the policy (see the module docstring)."""
    if not isinstance(spec, str) or not spec.strip():
        raise ConfigError(f"policy spec must be a string like 'transformers:PATH'; choices: {', '.join(KINDS)}")
    kind, _, arg = spec.strip().partition(":")
    kind = kind.lower()
    if kind == "scripted":
        name = arg or "default"
        if name not in _SCRIPTED:
            known = ", ".join(f"scripted:{n}" for n in scripted_names()) or "none yet"
            raise ConfigError(
                f"no scripted policy named {name!r} (registered: {known}). Register one with "
                "workbench.policies.register_scripted(name, factory), or import the module that does."
            )
        return _SCRIPTED[name](**kwargs)
    if kind not in KINDS:
        raise ConfigError(
            f"unknown policy kind {kind!r} in {spec!r}; "
            "choices: scripted[:NAME], transformers:PATH, openai:URL, vllm:PATH"
        )
    if not arg:
        what = "URL" if kind == "openai" else "PATH"
        raise ConfigError(f"policy spec {spec!r} needs a {what}: write '{kind}:{what}'")
    if kind == "transformers":
        from workbench.policies.hf import TransformersPolicy

        return TransformersPolicy(arg, **kwargs)
    if kind == "openai":
        from workbench.policies.openai_compat import OpenAIPolicy

        return OpenAIPolicy(arg, **kwargs)
    from workbench.policies.vllm_engine import VLLMPolicy

    return VLLMPolicy(arg, **kwargs)


__all__ = ["load_policy", "register_scripted", "scripted_names"]

"""The one protocol every model backend speaks.

The agent works in token space: it asks the policy to encode the opening chat (system + user),
then appends the exact sampled completion ids and the encoded observation ids turn after turn.
Nothing is ever re-tokenized, so what training sees is what was sampled.

    policy = TransformersPolicy("runs/tiny-model")
    ids = policy.codec.chat([{"role": "system", "content": ...}, {"role": "user", "content": q}])
    [out] = await policy.generate([ids], SamplingParams(max_new_tokens=256, stop=["</code>"]))
    out.text, out.token_ids, out.logprobs, out.finish_reason
    out.raw_logprobs   # the model's own logprobs, before any sampling processing (None where unavailable)
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from workbench.policies.sampling import LogitControls

from workbench.errors import ConfigError
from workbench.safetext import safe_text

AGENT_SETTINGS_KEY = "workbench_agent"
"""The key in a model's `config.json` holding the agent settings it was trained with
(`workbench.agent.config.stamp_model` writes it)."""


@dataclass
class SamplingParams:
    """How one generation samples. temperature / top_p / top_k left at None take the model's own default
    (its `generation_config.json`), else workbench's: 1.0 / 1.0 / 0 (`SamplingDefaults.choose`); a value
    given, even one equal to those, wins. temperature 0 = greedy, top_k 0 = off."""

    max_new_tokens: int = 512
    temperature: float | None = None
    top_p: float | None = None
    top_k: int | None = None
    stop: list[str] = field(default_factory=list)  # generation ends after the first stop string
    seed: int | None = None


@dataclass
class Completion:
    """One generated continuation."""

    text: str
    token_ids: list[int]
    logprobs: list[float] | None = None  # one per token in token_ids, None where unavailable
    finish_reason: str = "stop"  # "stop" (a stop string) | "eos" | "length" | "error"
    policy_version: int | None = None  # the weights' version (optimizer steps) when trainers publish them
    # The model's own logprob of each token: log-softmax of its unprocessed logits (before logit bias,
    # penalties, temperature, top-k and top-p). None where the backend cannot give it (scripted, HTTP).
    raw_logprobs: list[float] | None = None


@runtime_checkable
class Codec(Protocol):
    """Turns text into the policy's token ids and back. `chat` renders the opening messages."""

    def chat(self, messages: Sequence[dict[str, str]]) -> list[int]: ...

    def encode(self, text: str) -> list[int]: ...

    def decode(self, ids: Sequence[int]) -> str: ...

    @property
    def eos_token_id(self) -> int | None: ...


@runtime_checkable
class Policy(Protocol):
    """A model backend. `generate` takes a batch of prompts (token ids) and returns one
    `Completion` per prompt, in order. `name`, `codec` and `context_size` are read-only here: a
    backend may hold them as plain attributes or as properties."""

    @property
    def name(self) -> str: ...

    @property
    def codec(self) -> Codec:
        """The tokenizer of this model: prompts are `codec.chat(messages)`, completions decode with it."""
        ...

    @property
    def context_size(self) -> int | None:
        """Most tokens (prompt + completion) the model takes; None = unknown/unbounded."""
        ...

    async def generate(self, prompts: Sequence[list[int]], params: SamplingParams) -> list[Completion]: ...

    def describe(self) -> dict[str, Any]:
        """What produced a trajectory: backend, model path/URL, checkpoint; stored in lineage."""
        ...


def generate(
    policy: Policy, prompts: Sequence[list[int]], params: SamplingParams, *, controls: LogitControls | None = None
) -> list[Completion]:
    """Blocking `policy.generate(prompts, params)`, for scripts and notebooks (a running Jupyter loop is fine).

        [out] = generate(policy, [policy.codec.chat(messages)], SamplingParams(stop=["</code>"]))

    A backend that can answer without an event loop (`_generate_blocking`, as the local ones do: one batch, no
    request merging) is called directly; any other policy's coroutine runs to completion on a helper loop."""
    extra: dict[str, Any] = {} if controls is None else {"controls": controls}  # backends that take logit controls
    now = getattr(policy, "_generate_blocking", None)
    if callable(now):
        out: list[Completion] = now(prompts, params, **extra)
        return out
    from workbench.blocking import run_blocking

    generated: list[Completion] = run_blocking(policy.generate(prompts, params, **extra))
    return generated


class GenerateSync:
    """The old per-backend blocking call, kept for one release on the backends that had it."""

    def generate_sync(self, prompts: Sequence[list[int]], params: SamplingParams) -> list[Completion]:
        """Deprecated: `workbench.policies.generate(policy, prompts, params)`."""
        import warnings

        warnings.warn(
            "policy.generate_sync(...) is now workbench.policies.generate(policy, ...)",
            DeprecationWarning,
            stacklevel=2,
        )
        out: list[Completion] = getattr(self, "_generate_blocking")(prompts, params)  # noqa: B009
        return out


def policy_context_size(policy: Policy) -> int | None:
    """`policy.context_size` when it is a positive int, else None (policies written before it existed)."""
    size = getattr(policy, "context_size", None)
    return size if isinstance(size, int) and not isinstance(size, bool) and size > 0 else None


def model_agent_settings(source: Any) -> dict[str, Any]:
    """The raw agent settings a model carries ({} if none): `source` is a local model dir, a loaded
    model or its config. `workbench.agent.config.read_model_settings` checks them."""
    if isinstance(source, (str, Path)):
        path = Path(source).expanduser() / "config.json"
        if not path.is_file():
            return {}
        try:
            raw = json.loads(path.read_text())
        except ValueError as exc:
            raise ConfigError(f"{path} is not valid JSON ({exc}); it should be a Hugging Face model config") from None
        raw = raw.get(AGENT_SETTINGS_KEY) if isinstance(raw, dict) else None
    else:
        raw = getattr(getattr(source, "config", source), AGENT_SETTINGS_KEY, None)
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise ConfigError(
            f"{AGENT_SETTINGS_KEY!r} in the config of {source} must be a table of agent settings, "
            f"got {type(raw).__name__}: fix or remove it"
        )
    return dict(raw)


class ByteCodec:
    """A tokenizer-free codec: one token per UTF-8 byte (ids 0–255), EOS = 256.

    Exact and invertible, so scripted policies get true token counts and budgets without a model.
    """

    eos_token_id: int | None = 256

    def chat(self, messages: Sequence[dict[str, str]]) -> list[int]:
        text = "".join(f"<|{m['role']}|>\n{m['content']}\n" for m in messages) + "<|assistant|>\n"
        return self.encode(text)

    def encode(self, text: str) -> list[int]:
        return list(safe_text(text).encode("utf-8"))  # a lone surrogate encodes as U+FFFD

    def decode(self, ids: Sequence[int]) -> str:
        return bytes(i for i in ids if 0 <= i < 256).decode("utf-8", errors="replace")


def truncate_at_stop(text: str, stop: Sequence[str]) -> tuple[str, bool]:
    """Cut `text` just after the earliest stop string. Returns (text, whether a stop was hit)."""
    best = -1
    best_stop = ""
    for s in stop:
        i = text.find(s)
        if i != -1 and (best == -1 or i < best):
            best, best_stop = i, s
    if best == -1:
        return text, False
    return text[: best + len(best_stop)], True


__all__ = [
    "AGENT_SETTINGS_KEY",
    "ByteCodec",
    "Codec",
    "Completion",
    "Policy",
    "SamplingParams",
    "generate",
    "model_agent_settings",
    "policy_context_size",
    "truncate_at_stop",
]

"""`GatewayConfig`: what a `ModelGateway` enforces, with `help` on every field.

GatewayConfig(training=TrainingSampling(temperature=1.0, top_p=1.0, max_tokens=512))
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from workbench.errors import ConfigError

__all__ = ["AUXILIARY_HEADER", "GatewayConfig", "HistoryMode", "TrainingSampling"]

AUXILIARY_HEADER = "x-workbench-auxiliary"
"""A call sent with this header set to 1 / true (a title, summary or judge call) is recorded but never trained on."""

HistoryMode = Literal["sampled", "template"]
"""For templates that rewrite history: `sampled` keeps one segment with the sampled history; `template` uses the
template's own rendering, a new segment per turn (`GatewayConfig.history`)."""


@dataclass(frozen=True)
class TrainingSampling:
    """The sampling every call gets in training, whatever the harness asks (both are recorded)."""

    temperature: float = 1.0
    top_p: float = 1.0
    max_tokens: int | None = None  # None: the harness's max_tokens, else the room left in the context


@dataclass(frozen=True)
class GatewayConfig:
    """How the model gateway serves and records calls."""

    max_body_bytes: int = field(default=64 << 20, metadata={"help": "larger request bodies get 413 (default 64 MiB)"})
    training: TrainingSampling | None = field(
        default=None,
        metadata={"help": "training mode: sampling set from here whatever the harness asks; n > 1 refused"},
    )
    history: HistoryMode = field(
        default="sampled",
        metadata={
            "help": "for templates that rewrite history (Qwen3 drops past <think>): 'sampled' keeps one segment "
            "with the sampled history; 'template' uses the template's own rendering, a new segment per turn"
        },
    )
    default_max_tokens: int = field(
        default=1024,
        metadata={"help": "completion tokens when neither the harness nor the policy's context bounds them"},
    )
    rollout_limit_s: float | None = field(
        default=3600.0,
        metadata={"help": "a rollout still open this long after it opened ends as error (kept, never trained on)"},
    )
    retry_memory: int = field(default=64, metadata={"help": "replies kept per rollout to replay on a client retry"})

    def __post_init__(self) -> None:
        if self.max_body_bytes < 1 << 10:
            raise ConfigError(f"max_body_bytes must be at least 1024, got {self.max_body_bytes}")
        if self.history not in ("sampled", "template"):
            raise ConfigError(f"history must be 'sampled' or 'template', got {self.history!r}")
        if self.rollout_limit_s is not None and self.rollout_limit_s <= 0:
            raise ConfigError(f"rollout_limit_s must be > 0 or None, got {self.rollout_limit_s}")
        if self.default_max_tokens < 1:
            raise ConfigError(f"default_max_tokens must be >= 1, got {self.default_max_tokens}")

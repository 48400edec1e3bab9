"""Pieces shared by the local backends: per-row sampling of next tokens and stop detection.

Logprobs are those of the distribution actually sampled from ("processed", as vLLM's
`logprobs_mode="processed_logprobs"` that TRL uses): log-softmax after temperature, top-k and
top-p. Greedy rows (temperature 0) report the log-softmax of the unscaled, unfiltered logits.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from workbench.policies.base import SamplingParams


@dataclass
class RowSampler:
    """How one row samples: its params and its own RNG, so a seeded row gives the same
    tokens whether it runs alone or merged into a batch."""

    params: SamplingParams
    generator: object  # torch.Generator


def sample_next(logits, samplers: Sequence[RowSampler]):
    """Pick one token per row. `logits` is (B, V) float. Returns (tokens (B,), logprobs (B,))."""
    import torch

    logits = logits.float()
    tokens = torch.empty(len(samplers), dtype=torch.long, device=logits.device)
    logprobs = torch.empty(len(samplers), dtype=torch.float32, device=logits.device)
    for i, s in enumerate(samplers):
        row = logits[i]
        p = s.params
        if p.temperature <= 0:
            lp = torch.log_softmax(row, dim=-1)
            tok = torch.argmax(row)
        else:
            row = _filter_top_k_top_p(row / p.temperature, p.top_k, p.top_p)
            lp = torch.log_softmax(row, dim=-1)
            tok = torch.multinomial(lp.exp(), 1, generator=s.generator)[0]
        tokens[i] = tok
        logprobs[i] = lp[tok]
    return tokens, logprobs


def _filter_top_k_top_p(row, top_k: int, top_p: float):
    import torch

    if top_k and 0 < top_k < row.numel():
        kth = torch.topk(row, top_k).values[-1]
        row = row.masked_fill(row < kth, float("-inf"))
    if top_p < 1.0:
        sorted_logits, order = torch.sort(row, descending=True)
        probs = torch.softmax(sorted_logits, dim=-1)
        # drop a token when the mass before it already reaches top_p (the first is always kept)
        drop = (probs.cumsum(-1) - probs) >= top_p
        sorted_logits = sorted_logits.masked_fill(drop, float("-inf"))
        row = torch.empty_like(row).scatter_(0, order, sorted_logits)
    return row


class StopWatcher:
    """Says when generated ids first contain a stop string, decoding only a tail window.

    A stop string of n characters spans at most 4n byte-level tokens, so decoding the last
    4n + 4 ids after every step finds it at the exact step that completes it.
    """

    def __init__(self, stop: Sequence[str], decode: Callable[[Sequence[int]], str]):
        self.stop = [s for s in stop if s]
        self.decode = decode
        self.window = 4 * max((len(s) for s in self.stop), default=0) + 4

    def hit(self, ids: Sequence[int]) -> bool:
        if not self.stop:
            return False
        tail = self.decode(ids[-self.window :])
        return any(s in tail for s in self.stop)


def validate_params(params: SamplingParams) -> None:
    from workbench.errors import ConfigError

    if params.max_new_tokens < 1:
        raise ConfigError(f"max_new_tokens must be >= 1, got {params.max_new_tokens}")
    if params.temperature < 0:
        raise ConfigError(f"temperature must be >= 0 (0 = greedy), got {params.temperature}")
    if not 0 < params.top_p <= 1:
        raise ConfigError(f"top_p must be in (0, 1], got {params.top_p}")
    if params.top_k < 0:
        raise ConfigError(f"top_k must be >= 0 (0 = off), got {params.top_k}")
    if isinstance(params.stop, str):
        raise ConfigError(f"stop must be a list of strings, got the string {params.stop!r}: use stop=[{params.stop!r}]")


__all__ = ["RowSampler", "StopWatcher", "sample_next", "validate_params"]

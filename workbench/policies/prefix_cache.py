"""An episode's KV cache, kept between its turns, so the next turn prefills only what is new.

An NB-Agent episode calls `generate` once per turn with its whole context: the last turn's prompt
and completion, then the observation. Prefilling all of it again each turn costs more than the
turn's own tokens (a 4-turn episode of SmolLM2 prefills ~2,000 tokens to generate ~700). With a
`PrefixCache`, a row that finishes leaves its keys and values (one row, padding removed) under
its tokens; a later row whose prompt starts with all of those tokens starts from them and
prefills only the rest.

Keys are valid only for the weights that computed them. `PrefixCache.check(model)` empties the
cache when any parameter was changed in place (an optimizer step bumps every updated tensor's
version), replaced, or another adapter is active; the policy calls it before each admission.
Entries go least-recently-stored first once `max_bytes` is reached; a hit takes its entry out
(the row stores its longer context when it finishes).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch


@dataclass
class Prefix:
    """A cached row: its tokens and, per layer, its keys and values (1, heads, len(tokens), dim)."""

    tokens: torch.Tensor
    layers: list[tuple[torch.Tensor, torch.Tensor]]

    @property
    def nbytes(self) -> int:
        return sum(k.nbytes + v.nbytes for k, v in self.layers)


@dataclass
class PrefixStats:
    hits: int = 0
    misses: int = 0
    reused_tokens: int = 0  # prompt tokens not prefilled again
    cleared: int = 0  # times the weights changed under a non-empty cache


class PrefixCache:
    """Finished rows' KV caches by token prefix, within `max_bytes` (see the module docstring)."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.entries: OrderedDict[int, Prefix] = OrderedDict()
        self.nbytes = 0
        self.stats = PrefixStats()
        self._weights: tuple[Any, ...] | None = None
        self._next = 0

    def check(self, model: Any) -> None:
        """Empty the cache if `model`'s weights or active adapter changed since the last check."""
        fingerprint = weights_fingerprint(model)
        if fingerprint != self._weights:
            if self.entries:
                self.stats.cleared += 1
            self.clear()
            self._weights = fingerprint

    def clear(self) -> None:
        self.entries.clear()
        self.nbytes = 0

    def store(self, tokens: Sequence[int], layers: list[tuple[torch.Tensor, torch.Tensor]]) -> None:
        import torch

        entry = Prefix(torch.tensor(list(tokens), dtype=torch.long), layers)
        if not tokens or entry.nbytes > self.max_bytes:
            return
        while self.entries and self.nbytes + entry.nbytes > self.max_bytes:
            _, old = self.entries.popitem(last=False)
            self.nbytes -= old.nbytes
        self._next += 1
        self.entries[self._next] = entry
        self.nbytes += entry.nbytes

    def take(self, prompt: Sequence[int]) -> tuple[int, list[tuple[torch.Tensor, torch.Tensor]]] | None:
        """The longest cached row whose tokens are all a proper prefix of `prompt`, as (its length,
        its layers); the entry leaves the cache. None when no row is. A row that shares only part
        of the prompt is not used: the same prompt asked again gets a full prefill, so its
        logprobs are bit-identical to the first answer's."""
        import torch

        query = torch.tensor(list(prompt), dtype=torch.long)
        best, best_len = None, 0
        for key, entry in self.entries.items():
            n = len(entry.tokens)
            if best_len < n < len(query) and bool((entry.tokens == query[:n]).all()):
                best, best_len = key, n
        if best is None:
            self.stats.misses += 1
            return None
        entry = self.entries.pop(best)
        self.nbytes -= entry.nbytes
        self.stats.hits += 1
        self.stats.reused_tokens += best_len
        return best_len, entry.layers


def weights_fingerprint(model: Any) -> tuple[Any, ...]:
    """What changes when the weights that compute a KV cache change: each parameter's identity and
    in-place version (optimizer steps and `load_state_dict` bump it), and the active adapter."""
    versions = tuple((id(p), p._version) for p in model.parameters())
    adapter = getattr(model, "active_adapters", None)
    try:
        active = tuple(adapter() if callable(adapter) else adapter or ())
    except ValueError:  # peft raises when no adapter is loaded
        active = ()
    return active, versions


__all__ = ["Prefix", "PrefixCache", "PrefixStats", "weights_fingerprint"]

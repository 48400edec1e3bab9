"""The running batch of `TransformersPolicy`: continuous batching over a Hugging Face KV cache.

Rows join the batch between decode steps and leave it the step they finish, so a turn that ends
early goes back to its episode at once (its code runs while the others still decode) and the next
turn of any episode joins the running batch instead of waiting for the slowest row. Each row keeps
its own sampler and RNG, so its tokens do not depend on when it joined or who it ran with.

How rows join: the new rows are prefilled on their own (left-padded to their longest prompt), then
their cache is concatenated to the running one along the batch, the shorter of the two padded on
the left (masked out; each row's positions are explicit, so padding moves no token). Columns no
row attends to any more are cut from the left. This needs every cache layer to be a plain
`DynamicLayer` (most decoder models); for other caches (sliding windows, linear attention) the
batch runs as a fixed one: rows join only when it is empty and finished rows stay, fed padding,
until the last one ends.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from workbench.policies.batching import Row
from workbench.policies.prefix_cache import PrefixCache
from workbench.policies.sampling import RowSampler, sample_next

if TYPE_CHECKING:
    import torch


@dataclass
class Generated:
    """What one row has generated so far, and why it stopped (`finish`, None while it runs)."""

    limit: int
    stops: Callable[[list[int]], bool]
    ids: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)  # processed (see sampling.py)
    raw_logprobs: list[float] = field(default_factory=list)  # the model's own
    tops: list[dict[int, float]] = field(default_factory=list)
    finish: str | None = None

    def take(self, token: int, logprob: float, raw: float, top: list[tuple[int, float]] | None, eos: set[int]) -> None:
        self.ids.append(token)
        self.logprobs.append(logprob)
        self.raw_logprobs.append(raw)
        if top is not None:
            self.tops.append(dict(top))
        if token in eos:
            self.finish = "eos"
        elif self.stops(self.ids):
            self.finish = "stop"
        elif len(self.ids) >= self.limit:
            self.finish = "length"


@dataclass
class Member:
    """One row in the running batch: its caller's key, sampler and what it has generated."""

    key: int
    row: Row
    sampler: RowSampler
    generated: Generated


class DecodeModel(Protocol):
    """What the running batch needs from its policy (`TransformersPolicy` gives it)."""

    model: Any
    pad_id: int
    eos_ids: set[int]
    max_positions: int | None
    last_logits: dict[str, int]
    prefix_cache: PrefixCache | None

    def member(self, key: int, row: Row) -> Member: ...

    def forward(self, **inputs: Any) -> Any: ...

    def left_padded(self, rows: Sequence[Row]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]: ...


class RunningBatch:
    """The rows decoding now, their KV cache, attention mask, positions and next input tokens."""

    def __init__(self, owner: DecodeModel, done: Callable[[Member], None]) -> None:
        self.owner = owner
        self.done = done  # called once per row, the step it finishes
        self.members: list[Member] = []
        self.cache: Any = None
        self.mask: torch.Tensor | None = None  # (B, T): 1 where a cached position is a real token
        self.pos: torch.Tensor | None = None  # (B, 1): the position of each row's next input token - 1
        self.next_ids: torch.Tensor | None = None  # (B,): each row's last sampled token, fed next
        self.merges = True  # False once a cache layer is not a plain DynamicLayer (see the module docstring)

    def __len__(self) -> int:
        return sum(m.generated.finish is None for m in self.members)

    def can_admit(self) -> bool:
        return self.merges or not self.members

    def admit(self, new: Sequence[tuple[int, Row]]) -> None:
        """Prefill `new` rows (from a cached prefix where one matches), sample their first tokens and
        merge the unfinished ones into the batch."""
        owner = self.owner
        members = [owner.member(key, row) for key, row in new]
        prefixes = owner.prefix_cache if self.merges else None
        found = [prefixes.take(m.row.prompt) if prefixes is not None else None for m in members]
        fresh = [m for m, hit in zip(members, found, strict=True) if hit is None]
        if fresh:
            self._join(fresh, *self._prefill(fresh))
        for m, hit in zip(members, found, strict=True):
            if hit is not None:
                self._join([m], *self._prefill_after(m, *hit))

    def _prefill(self, members: Sequence[Member]) -> tuple[Any, torch.Tensor, torch.Tensor, torch.Tensor]:
        """The rows' prompts in one left-padded forward: (cache, mask, positions, last logits)."""
        owner = self.owner
        ids, mask, pos = owner.left_padded([m.row for m in members])
        out = owner.forward(input_ids=ids, attention_mask=mask, position_ids=pos, use_cache=True, **owner.last_logits)
        return out.past_key_values, mask, pos, out.logits[:, -1, :]

    def _prefill_after(
        self, member: Member, length: int, layers: list[tuple[torch.Tensor, torch.Tensor]]
    ) -> tuple[Any, torch.Tensor, torch.Tensor, torch.Tensor]:
        """One row's prompt past its first `length` tokens, whose keys and values are `layers`."""
        import torch
        from transformers.cache_utils import DynamicCache

        owner, prompt = self.owner, member.row.prompt
        device = layers[0][0].device
        ids = torch.tensor([prompt[length:]], device=device)
        mask = torch.ones((1, len(prompt)), dtype=torch.long, device=device)
        pos = torch.arange(length, len(prompt), device=device)[None]
        cache = DynamicCache(ddp_cache_data=layers)
        out = owner.forward(
            input_ids=ids,
            attention_mask=mask,
            position_ids=pos,
            past_key_values=cache,
            use_cache=True,
            **owner.last_logits,
        )
        return out.past_key_values, mask, pos, out.logits[:, -1, :]

    def _join(
        self, members: list[Member], cache: Any, mask: torch.Tensor, pos: torch.Tensor, logits: torch.Tensor
    ) -> None:
        """Sample the prefilled rows' first tokens; merge those still running into the batch."""
        import torch

        if not self.members:
            self.merges = _plain_layers(cache)
        next_ids, ended = self._sample(members, logits)
        self._finish(ended, members, cache, mask)
        keep = [i for i, m in enumerate(members) if m.generated.finish is None]
        if not keep:
            return
        pos = pos[:, -1:]
        if len(keep) < len(members):
            index = torch.tensor(keep, device=mask.device)
            cache.batch_select_indices(index)
            mask, pos, next_ids = mask[index], pos[index], next_ids[index]
        members = [members[i] for i in keep]
        if not self.members:
            self.members, self.cache, self.mask, self.pos, self.next_ids = members, cache, mask, pos, next_ids
            return
        assert self.mask is not None and self.pos is not None and self.next_ids is not None
        self.mask = _merge_caches(self.cache, self.mask, cache, mask)
        self.pos = torch.cat([self.pos, pos])
        self.next_ids = torch.cat([self.next_ids, next_ids])
        self.members += members

    def step(self) -> None:
        """Decode one token for every row; rows that finish are handed back and leave the batch."""
        import torch

        assert self.mask is not None and self.pos is not None and self.next_ids is not None
        owner = self.owner
        self.mask = torch.cat([self.mask, torch.ones_like(self.mask[:, :1])], dim=1)
        self.pos = self.pos + 1
        if owner.max_positions:  # finished rows of a fixed batch keep stepping on padding; keep them in range
            self.pos = self.pos.clamp(max=owner.max_positions - 1)
        out = owner.forward(
            input_ids=self.next_ids[:, None],
            attention_mask=self.mask,
            position_ids=self.pos,
            past_key_values=self.cache,
            use_cache=True,
        )
        self.cache = out.past_key_values
        self.next_ids, ended = self._sample(self.members, out.logits[:, -1, :])
        self._finish(ended, self.members, self.cache, self.mask)
        if self.merges or not len(self):  # a fixed batch empties once its last row ends
            self._drop_finished()

    def _sample(self, members: Sequence[Member], logits: torch.Tensor) -> tuple[torch.Tensor, list[int]]:
        """Sample each running member's next token from `logits` (B, V). Returns the tokens to feed next
        and the indices of the rows that finished now (`_finish` hands them back)."""
        import torch

        tokens, lps, raw, tops = sample_next(logits, [m.sampler for m in members])
        token_list = tokens.tolist()
        ended: list[int] = []
        for i, (m, token, lp, raw_lp, top) in enumerate(
            zip(members, token_list, lps.tolist(), raw.tolist(), tops, strict=True)
        ):
            if m.generated.finish is None:
                m.generated.take(token, lp, raw_lp, top, self.owner.eos_ids)
                if m.generated.finish is not None:
                    ended.append(i)
        fed = [t if m.generated.finish is None else self.owner.pad_id for t, m in zip(token_list, members, strict=True)]
        return torch.tensor(fed, device=logits.device), ended

    def _finish(self, ended: list[int], members: Sequence[Member], cache: Any, mask: torch.Tensor) -> None:
        """Hand back the rows that ended, each after leaving its keys and values in the policy's
        prefix cache (see prefix_cache.py)."""
        prefixes = self.owner.prefix_cache if self.merges else None
        for i in ended:
            m = members[i]
            if prefixes is not None:
                tokens = m.row.prompt + m.generated.ids[:-1]  # the last sampled token was never fed
                columns = mask[i].nonzero().squeeze(1)
                if len(columns) == len(tokens):
                    layers = [(k.keys[i : i + 1, :, columns], k.values[i : i + 1, :, columns]) for k in cache.layers]
                    prefixes.store(tokens, layers)
            self.done(m)

    def _drop_finished(self) -> None:
        import torch

        assert self.mask is not None and self.pos is not None and self.next_ids is not None
        keep = [i for i, m in enumerate(self.members) if m.generated.finish is None]
        if len(keep) == len(self.members):
            return
        self.members = [self.members[i] for i in keep]
        if not keep:
            self.cache = self.mask = self.pos = self.next_ids = None
            return
        index = torch.tensor(keep, device=self.mask.device)
        self.cache.batch_select_indices(index)  # merges is True here: every row left can be selected
        self.mask, self.pos, self.next_ids = self.mask[index], self.pos[index], self.next_ids[index]
        unused = int(self.mask.any(dim=0).long().argmax())  # leading columns no row attends to
        if unused:
            self.mask = self.mask[:, unused:]
            for layer in self.cache.layers:
                layer.keys, layer.values = layer.keys[:, :, unused:], layer.values[:, :, unused:]


def _plain_layers(cache: Any) -> bool:
    from transformers.cache_utils import DynamicLayer

    layers = getattr(cache, "layers", None) or []
    return bool(layers) and all(type(layer) is DynamicLayer for layer in layers)


def _merge_caches(cache: Any, mask: torch.Tensor, new_cache: Any, new_mask: torch.Tensor) -> torch.Tensor:
    """Append `new_cache`'s rows to `cache` in place (the shorter left-padded); the merged mask."""
    import torch
    import torch.nn.functional as F

    width, new_width = mask.shape[1], new_mask.shape[1]
    pad, new_pad = max(new_width - width, 0), max(width - new_width, 0)
    for layer, new in zip(cache.layers, new_cache.layers, strict=True):
        layer.keys = torch.cat([F.pad(layer.keys, (0, 0, pad, 0)), F.pad(new.keys, (0, 0, new_pad, 0))])
        layer.values = torch.cat([F.pad(layer.values, (0, 0, pad, 0)), F.pad(new.values, (0, 0, new_pad, 0))])
    return torch.cat([F.pad(mask, (pad, 0)), F.pad(new_mask, (new_pad, 0))])


__all__ = ["DecodeModel", "Generated", "Member", "RunningBatch"]

"""Per-token logprobs of the trained tokens in checkpointed chunks of positions: the GRPO loss pass
without the (rows x tokens x vocabulary) logits.

TRL 1.16 patches the model with a fused LM head (`model(..., labels=labels, fused_lm_head=True)` returns
`log_probs` and `entropy` instead of logits). Without Triton (on a CPU) that head scores every position,
prompt and padding included, in tiles of 4096 positions x 32768 vocabulary entries, and its torch fold
holds several float32 copies of a tile: gigabytes on a 49k vocabulary, whatever the model's size.
`install_chunked_head` puts this head in front of it:

1. the model body runs once, to hidden states, on the rows packed to start at position 0 (`packed_rows`:
   TRL's left-padded prompts and right-padded completions make a batch of multi-turn rows up to twice
   as wide as its longest row);
2. only positions whose label is kept (the completion's tokens; never the prompt or padding) are scored,
   `chunk` positions at a time: lm_head -> logits / temperature -> log-softmax -> the label's logprob and
   the entropy;
3. each chunk runs under `torch.utils.checkpoint`, so backward keeps only the hidden states and
   recomputes one chunk's logits at a time.

Values equal the plain `log_softmax(model(ids).logits / temperature)` path (tests/train/test_logprobs.py).

    add_fused_lm_head(model, temperature=t)                  # TRL, in GRPOTrainer.__init__
    install_chunked_head(model, temperature=t, chunk=256)     # WorkbenchGRPOTrainer, after it
    out = model(ids, attention_mask=mask, labels=labels, fused_lm_head=True)
    out.log_probs, out.entropy                               # (rows, tokens - 1), zero where labels are -100

A model whose head this does not cover (a vision-language or MoE model, scaled or soft-capped logits, a
sharded head) keeps TRL's head (`chunked_head_supported`).
"""

from __future__ import annotations

import functools
import types
from typing import Any, Protocol

import torch
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint

IGNORED = -100  # the label of a position that is not scored (transformers' convention)
# text-config attributes that change the head's logits (TRL's fused head knows them; this one does not)
_LOGIT_TRANSFORMS = ("final_logit_softcapping", "logit_scale", "output_multiplier", "lm_head_multiplier")


class CausalLM(Protocol):
    """What the head needs of a transformers causal LM."""

    config: Any
    forward: Any

    def get_output_embeddings(self) -> Any: ...


def head_logprobs(
    hidden: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None, labels: torch.Tensor, temperature: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """Logprob of each label and the entropy, at `temperature`, for positions `hidden` (N, H) -> two (N,)."""
    logits = F.linear(hidden, weight, bias).float() / temperature
    logp = logits.log_softmax(dim=-1)
    picked = logp.gather(-1, labels.unsqueeze(-1)).squeeze(-1)
    entropy = -(logp.exp() * logp).sum(dim=-1)
    return picked, entropy


def chunked_logprobs(
    hidden: torch.Tensor,
    weight: torch.Tensor,
    bias: torch.Tensor | None,
    labels: torch.Tensor,
    temperature: float,
    chunk: int,
) -> tuple[torch.Tensor, torch.Tensor]:
    """`head_logprobs` over `chunk` positions at a time; with grad, each chunk's logits are recomputed
    in backward instead of kept."""
    picked: list[torch.Tensor] = []
    entropies: list[torch.Tensor] = []
    for start in range(0, hidden.size(0), chunk):
        part = (hidden[start : start + chunk], weight, bias, labels[start : start + chunk], temperature)
        if torch.is_grad_enabled():
            logp, entropy = checkpoint(head_logprobs, *part, use_reentrant=False)
        else:
            logp, entropy = head_logprobs(*part)
        picked.append(logp)
        entropies.append(entropy)
    if not picked:  # no scored position: empty, still connected to the graph
        empty = hidden.sum(dim=-1).float() * 0
        return empty, empty
    return torch.cat(picked), torch.cat(entropies)


def chunked_head_supported(model: CausalLM) -> bool:
    """Whether `install_chunked_head` covers `model`'s head: a text-only, dense causal LM whose logits are
    the plain `lm_head(hidden)`."""
    config = model.config
    text = config.get_text_config()
    if text is not config or getattr(text, "output_router_logits", False) or hasattr(text, "num_experts"):
        return False
    if any(getattr(text, name, None) is not None for name in _LOGIT_TRANSFORMS):
        return False
    if getattr(text, "logits_scaling", None) is not None:
        return False
    head = model.get_output_embeddings()
    return head is not None and type(head.weight) in (torch.nn.Parameter, torch.Tensor)


def install_chunked_head(model: CausalLM, *, temperature: float, chunk: int) -> bool:
    """Route `model(..., fused_lm_head=True)` through the chunked head (see the module docstring); any other
    call goes to the forward it wraps (TRL's fused head, which falls back to the model's own). Returns
    False, and changes nothing, for a model `chunked_head_supported` refuses."""
    if chunk < 1:
        raise ValueError(f"chunk must be >= 1 positions, got {chunk}")
    if not chunked_head_supported(model):
        return False
    wrapped = model.forward

    @functools.wraps(type(model).forward)  # `generate` checks its kwargs against the signature
    def forward(self: Any, *args: Any, fused_lm_head: bool = False, labels: Any = None, **kwargs: Any) -> Any:
        if not fused_lm_head or kwargs.get("shift_labels") is not None or kwargs.get("output_router_logits"):
            return wrapped(*args, fused_lm_head=fused_lm_head, labels=labels, **kwargs)
        return _chunked_forward(self, args, labels, kwargs, temperature, chunk)

    model.forward = types.MethodType(forward, model)
    return True


def _chunked_forward(
    model: Any, args: tuple[Any, ...], labels: torch.Tensor, kwargs: dict[str, Any], temperature: float, chunk: int
) -> Any:
    from trl.trainer.utils import FusedCausalLMOutput

    count = kwargs.pop("num_items_in_batch", None)
    kwargs.pop("shift_labels", None)
    kwargs["use_cache"] = False
    packed = None if args else packed_rows(kwargs.get("attention_mask"), set(kwargs))
    scored_labels = labels
    if packed is not None:  # each row's tokens from position 0: the body runs on (rows, longest row)
        index, take, keep = packed
        kwargs.update(input_ids=kwargs["input_ids"].gather(1, take), attention_mask=keep.long())
        scored_labels = labels.gather(1, take).masked_fill(~keep, IGNORED)
    hidden = model.base_model(*args, **kwargs).last_hidden_state[:, :-1]
    head = model.get_output_embeddings()
    targets = scored_labels[:, 1:].to(head.weight.device)
    scored = targets != IGNORED
    logp, entropy = chunked_logprobs(
        hidden.to(head.weight.device)[scored], head.weight, head.bias, targets[scored], temperature, chunk
    )
    log_probs = logp.new_zeros(scored.shape).masked_scatter(scored, logp)
    entropies = entropy.new_zeros(scored.shape).masked_scatter(scored, entropy)
    mask = labels[:, 1:].to(head.weight.device) != IGNORED
    if packed is not None:  # back to the batch's positions
        log_probs, entropies = (_unpack(x, index.to(x.device), mask.size(1)) for x in (log_probs, entropies))
    loss = -log_probs.sum() / (mask.sum().clamp(min=1) if count is None else count)
    return FusedCausalLMOutput(loss=loss, log_probs=log_probs, entropy=entropies, label_mask=mask)


_PACKABLE = {"input_ids", "attention_mask", "use_cache", "return_dict"}  # inputs with no per-position layout


def packed_rows(
    attention: torch.Tensor | None, inputs: set[str]
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor] | None:
    """Where each row's tokens move so that they start at position 0: (index, take, keep), each (rows, width).

    TRL left-pads prompts and right-pads completions, so a batch whose rows' prompt and completion lengths
    vary (turns of multi-turn episodes) is wider than its longest row: a row of the longest prompt and the
    longest completion. Packed, the body runs on the longest row's width, and each row's positions start
    at 0, as when it was generated. `index[r, j]` is token j's position in the batch (past its end for
    padding), `take` the same clamped into the batch, `keep` whether j is one of the row's tokens.
    `inputs` names the forward's inputs. None when it saves nothing, the mask has holes, the rows are not
    `input_ids`, or an input has a per-position layout."""
    if "input_ids" not in inputs or attention is None or attention.dim() != 2 or not inputs <= _PACKABLE:
        return None
    real = attention.bool()
    lengths = real.sum(1)
    lead = (real.cumsum(1) == 0).sum(1)
    width = int(lengths.max().clamp(min=1))
    positions = torch.arange(real.size(1), device=real.device)
    contiguous = ((positions >= lead[:, None]) & (positions < (lead + lengths)[:, None])) == real
    if width >= real.size(1) or not bool(contiguous.all()):
        return None
    index = lead[:, None] + torch.arange(width, device=real.device)
    return index, index.clamp(max=real.size(1) - 1), index < (lead + lengths)[:, None]


def _unpack(values: torch.Tensor, index: torch.Tensor, width: int) -> torch.Tensor:
    """Packed per-position values (rows, w - 1) back at their batch positions (rows, width)."""
    spare = values.new_zeros(values.size(0), width + index.size(1))
    return spare.scatter(1, index[:, : values.size(1)], values)[:, :width]


__all__ = [
    "CausalLM",
    "chunked_head_supported",
    "chunked_logprobs",
    "head_logprobs",
    "install_chunked_head",
    "packed_rows",
]

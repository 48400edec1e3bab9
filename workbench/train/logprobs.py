"""Per-token logprobs of the trained tokens in checkpointed chunks of positions: the GRPO loss pass
without the (rows x tokens x vocabulary) logits.

TRL 1.16 patches the model with a fused LM head (`model(..., labels=labels, fused_lm_head=True)` returns
`log_probs` and `entropy` instead of logits). Without Triton (on a CPU) that head scores every position,
prompt and padding included, in tiles of 4096 positions x 32768 vocabulary entries, and its torch fold
holds several float32 copies of a tile: gigabytes on a 49k vocabulary, whatever the model's size.
`install_chunked_head` puts this head in front of it:

1. the model body runs once, to hidden states;
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
    hidden = model.base_model(*args, **kwargs).last_hidden_state[:, :-1]
    head = model.get_output_embeddings()
    targets = labels[:, 1:].to(head.weight.device)
    mask = targets != IGNORED
    logp, entropy = chunked_logprobs(
        hidden.to(head.weight.device)[mask], head.weight, head.bias, targets[mask], temperature, chunk
    )
    log_probs = logp.new_zeros(mask.shape).masked_scatter(mask, logp)
    entropies = entropy.new_zeros(mask.shape).masked_scatter(mask, entropy)
    loss = -log_probs.sum() / (mask.sum().clamp(min=1) if count is None else count)
    return FusedCausalLMOutput(loss=loss, log_probs=log_probs, entropy=entropies, label_mask=mask)


__all__ = ["CausalLM", "chunked_head_supported", "chunked_logprobs", "head_logprobs", "install_chunked_head"]

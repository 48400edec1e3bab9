"""The chunked, recomputing logprob head (workbench.train.logprobs) gives the plain path's values and
gradients: log-softmax of the full logits at the run's temperature, for full and LoRA models, and inside
the GRPO trainer in place of TRL's fused head."""

from __future__ import annotations

import copy

import pytest
import torch
from trl.trainer.utils import add_fused_lm_head

from workbench.errors import ConfigError
from workbench.train.config import TrainConfig
from workbench.train.logprobs import chunked_head_supported, chunked_logprobs, install_chunked_head, packed_rows

TEMPERATURE = 0.7
KEEP = 25  # completion positions scored, as TRL's logits_to_keep


def batch(vocab: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Three rows of 40 ids; the second ends in padding."""
    gen = torch.Generator().manual_seed(0)
    ids = torch.randint(0, vocab, (3, 40), generator=gen)
    attn = torch.ones_like(ids)
    attn[1, -5:] = 0
    return ids, attn


def padded_batch(vocab: int) -> tuple[torch.Tensor, torch.Tensor]:
    """TRL's layout of multi-turn rows: prompts left-padded, completions right-padded, so the batch (40) is
    wider than its longest row (36)."""
    ids, attn = batch(vocab)
    attn[:] = 1
    attn[0, :4] = 0
    attn[1, :2], attn[1, -5:] = 0, 0
    attn[2, :9], attn[2, -3:] = 0, 0
    return ids, attn


def plain(model, ids, attn) -> tuple[torch.Tensor, torch.Tensor]:
    """Logprob of each completion token and the entropy, from the full logits."""
    logits = model(input_ids=ids, attention_mask=attn).logits[:, :-1][:, -KEEP:]
    logp = (logits.float() / TEMPERATURE).log_softmax(-1)
    return logp.gather(-1, ids[:, -KEEP:, None]).squeeze(-1), -(logp.exp() * logp).sum(-1)


def chunked(model, ids, attn) -> tuple[torch.Tensor, torch.Tensor]:
    labels = ids.masked_fill(attn == 0, -100)
    labels[:, :-KEEP] = -100  # TRL scores the completion only
    out = model(input_ids=ids, attention_mask=attn, labels=labels, fused_lm_head=True)
    return out.log_probs[:, -KEEP:], out.entropy[:, -KEEP:]


def with_chunked_head(model, chunk: int = 7):
    """`model` with TRL's fused head and the chunked head in front of it (as the trainer builds it)."""
    target = model.get_base_model() if hasattr(model, "get_base_model") else model
    add_fused_lm_head(target, temperature=TEMPERATURE, outputs=("log_probs", "entropy"))
    assert install_chunked_head(target, temperature=TEMPERATURE, chunk=chunk)
    return model


def assert_same_values_and_gradients(reference, model, ids, attn) -> None:
    mask = attn[:, -KEEP:].bool()
    weights = torch.randn(mask.shape, generator=torch.Generator().manual_seed(1))
    losses = []
    for m, scorer in ((reference, plain), (model, chunked)):
        logp, entropy = scorer(m, ids, attn)
        losses.append((logp[mask], entropy[mask]))
        ((logp * weights)[mask].sum() + entropy[mask].sum()).backward()
    (ref_logp, ref_entropy), (logp, entropy) = losses
    torch.testing.assert_close(logp, ref_logp, atol=1e-5, rtol=0)
    torch.testing.assert_close(entropy, ref_entropy, atol=1e-5, rtol=0)
    trained = [(n, p) for n, p in reference.named_parameters() if p.requires_grad]
    assert trained
    mine = dict(model.named_parameters())
    for name, p in trained:
        assert p.grad is not None and p.grad.abs().sum() > 0, name
        torch.testing.assert_close(mine[name].grad, p.grad, atol=1e-5, rtol=0, msg=name)


def test_full_model_logprobs_and_gradients_equal_the_plain_path(tiny):
    model, _ = tiny
    ids, attn = batch(model.config.vocab_size)
    assert_same_values_and_gradients(copy.deepcopy(model), with_chunked_head(model), ids, attn)


def test_packed_rows_give_the_padded_batch_s_values_and_gradients(tiny):
    """Packing moves each row to position 0 (36 wide instead of 40); with rotary positions only
    distances count, so logprobs and gradients equal the plain path on the padded batch."""
    model, _ = tiny
    ids, attn = padded_batch(model.config.vocab_size)
    index, take, keep = packed_rows(attn, {"input_ids", "attention_mask"})
    assert index.shape == (3, 36) and keep.sum(1).tolist() == [36, 33, 28]
    assert torch.equal(ids.gather(1, take)[1, :33], ids[1, 2:35])  # row 1's tokens, from position 0
    assert_same_values_and_gradients(copy.deepcopy(model), with_chunked_head(model), ids, attn)


def test_rows_are_not_packed_when_it_saves_nothing_or_cannot():
    _, attn = padded_batch(64)
    assert packed_rows(attn, {"input_ids", "attention_mask", "position_ids"}) is None  # own positions
    assert packed_rows(attn, {"inputs_embeds", "attention_mask"}) is None  # rows that are not ids
    holed = attn.clone()
    holed[0, 20] = 0
    assert packed_rows(holed, {"input_ids", "attention_mask"}) is None  # a hole in a row
    full = torch.ones_like(attn)
    assert packed_rows(full, {"input_ids", "attention_mask"}) is None  # no padding to drop


def test_lora_model_logprobs_and_gradients_equal_the_plain_path(tiny):
    from peft import LoraConfig, get_peft_model

    model, _ = tiny
    lora = get_peft_model(model, LoraConfig(r=4, lora_alpha=8, target_modules="all-linear", task_type="CAUSAL_LM"))
    with torch.no_grad():  # peft starts lora_B at zero: give the adapter an effect, and lora_A a gradient
        for name, p in lora.named_parameters():
            if "lora_B" in name:
                p.normal_(0, 0.1, generator=torch.Generator().manual_seed(len(name)))
    ids, attn = batch(model.config.vocab_size)
    assert_same_values_and_gradients(copy.deepcopy(lora), with_chunked_head(lora, chunk=16), ids, attn)


def test_without_fused_lm_head_the_model_is_unchanged(tiny):
    model, _ = tiny
    ids, attn = batch(model.config.vocab_size)
    before = model(input_ids=ids, attention_mask=attn).logits
    with_chunked_head(model)
    torch.testing.assert_close(model(input_ids=ids, attention_mask=attn).logits, before, atol=0, rtol=0)


def test_heads_it_does_not_cover_keep_trl_s(tiny):
    model, _ = tiny
    model.config.final_logit_softcapping = 30.0
    assert not chunked_head_supported(model)
    forward = model.forward
    assert install_chunked_head(model, temperature=1.0, chunk=8) is False and model.forward == forward


@pytest.mark.slow
def test_the_trainer_scores_through_the_chunked_head(tmp_path, tiny_model_dir, tasks, retriever, monkeypatch):
    from test_lora import lora_trainer

    from workbench.train import logprobs

    chunks: list[int] = []

    def counted(hidden, *args):
        chunks.append(args[-1])
        return chunked_logprobs(hidden, *args)

    monkeypatch.setattr(logprobs, "chunked_logprobs", counted)
    trainer = lora_trainer(tmp_path, tiny_model_dir, tasks, retriever, logprob_chunk=5, temperature=TEMPERATURE)
    ids, attn = batch(trainer.model.config.vocab_size)
    mask = attn[:, -KEEP:].bool()
    logp, entropy, _ = trainer._get_per_token_logps_and_entropies(trainer.model, ids, attn, KEEP, compute_entropy=True)
    assert chunks == [5]  # one pass, through this head, in chunks of logprob_chunk positions
    want_logp, want_entropy = plain(trainer.model, ids, attn)
    torch.testing.assert_close(logp[mask], want_logp[mask], atol=1e-5, rtol=0)
    torch.testing.assert_close(entropy[mask], want_entropy[mask], atol=1e-5, rtol=0)
    assert not logp[~mask].any()  # padding is not scored


def test_logprob_chunk_must_not_be_negative():
    assert TrainConfig().logprob_chunk == 256
    with pytest.raises(ConfigError, match="logprob_chunk"):
        TrainConfig(logprob_chunk=-1)

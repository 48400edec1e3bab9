"""`merge_lora_in_place`: a LoRA run's adapter folded into the model it was injected into."""

from __future__ import annotations

import torch

from workbench.demo.rl import merge_lora_in_place


def test_the_merged_model_computes_what_the_adapter_did_and_is_plain_again(tmp_path):
    from peft import LoraConfig, get_peft_model
    from peft.tuners.lora import LoraLayer
    from transformers import AutoModelForCausalLM

    from workbench.models.tiny import build_tiny_model

    path = build_tiny_model(tmp_path / "m", ["a b c d e f g"] * 8, vocab_size=300, n_layer=2, n_embd=32, n_head=2)
    model = AutoModelForCausalLM.from_pretrained(path)
    ids = torch.tensor([[5, 9, 17, 3, 11]])
    with torch.no_grad():
        base = model(ids).logits
    wrapped = get_peft_model(model, LoraConfig(r=4, lora_alpha=8, target_modules="all-linear"))
    torch.manual_seed(0)
    with torch.no_grad():
        for name, p in wrapped.named_parameters():
            if "lora_B" in name:
                p.normal_(0, 0.5)  # a trained adapter: B is no longer zero
        adapted = wrapped(ids).logits
    assert (adapted - base).abs().max() > 1e-2  # the adapter changes the output

    merge_lora_in_place(model)  # the model TRL handed to peft, not the wrapper

    assert not any(isinstance(m, LoraLayer) for m in model.modules())
    assert not any("lora_" in name for name, _ in model.named_parameters())
    assert all(p.requires_grad for p in model.parameters())  # full fine-tuning can follow
    with torch.no_grad():
        merged = model(ids).logits
    assert torch.allclose(merged, adapted, atol=1e-5)

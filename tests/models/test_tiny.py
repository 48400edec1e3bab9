import json

import pytest
import torch

from workbench.errors import ConfigError
from workbench.models import AGENT_TAGS, build_tiny_model, build_tokenizer, sample_texts

TRICKY = [
    "<think>plan it</think>\n<code>x = search('é 日本 🙂')\nprint(x)</code>\n<output>[1, 2]\n</output>",
    "  leading spaces, tabs\t and </code> mid-sentence<output>",
    "don't 12345 <|im_start|>user\nhi<|im_end|>\n",
]


@pytest.fixture(scope="module")
def tok():
    return build_tokenizer(sample_texts(50), vocab_size=350)


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    return build_tiny_model(
        tmp_path_factory.mktemp("tiny"),
        sample_texts(50),
        vocab_size=350,
        n_layer=1,
        n_embd=32,
        n_head=2,
        max_positions=256,
    )


@pytest.mark.parametrize("text", TRICKY)
def test_round_trip_is_exact(tok, text):
    ids = tok.encode(text, add_special_tokens=False)
    assert tok.decode(ids, skip_special_tokens=False, clean_up_tokenization_spaces=False) == text


def test_tags_are_single_tokens_that_survive_skip_special(tok):
    for tag in AGENT_TAGS:
        assert len(tok.encode(tag, add_special_tokens=False)) == 1
        assert len(tok.encode(f"a{tag}b", add_special_tokens=False)) == 3
    ids = tok.encode("<code>x</code>", add_special_tokens=False)
    assert tok.decode(ids, skip_special_tokens=True) == "<code>x</code>"
    assert tok.eos_token == "<|im_end|>" and tok.pad_token == "<|endoftext|>"


def test_chat_template_is_chatml_and_prefix_preserving(tok):
    msgs = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "2+2?"},
        {"role": "assistant", "content": "<think>easy</think>4"},
        {"role": "user", "content": "and 3+3?"},
    ]
    first = tok.apply_chat_template(msgs[:2], tokenize=False, add_generation_prompt=True)
    assert first == "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\n2+2?<|im_end|>\n<|im_start|>assistant\n"
    for k in range(1, len(msgs)):
        shorter = tok.apply_chat_template(msgs[:k], tokenize=False, add_generation_prompt=False)
        longer = tok.apply_chat_template(msgs[: k + 1], tokenize=False, add_generation_prompt=False)
        assert longer.startswith(shorter)


def test_saved_model_loads_offline_and_tokenizes_the_same(model_dir, tok):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    loaded_tok = AutoTokenizer.from_pretrained(model_dir, local_files_only=True)
    model = AutoModelForCausalLM.from_pretrained(model_dir, local_files_only=True)
    assert model.config.model_type == "qwen2" and model.config.num_hidden_layers == 1
    assert model.config.vocab_size == len(loaded_tok)
    assert model.generation_config.eos_token_id == loaded_tok.eos_token_id
    fresh = build_tokenizer(sample_texts(50), vocab_size=350)
    for text in TRICKY:
        assert loaded_tok.encode(text, add_special_tokens=False) == fresh.encode(text, add_special_tokens=False)
    ids = torch.tensor([loaded_tok.encode("<code>print(1)</code>", add_special_tokens=False)])
    assert model(ids).logits.shape == (1, ids.shape[1], len(loaded_tok))


def test_same_seed_same_model_other_seed_other_weights(tmp_path, model_dir):
    kw = dict(vocab_size=350, n_layer=1, n_embd=32, n_head=2, max_positions=256)
    again = build_tiny_model(tmp_path / "again", sample_texts(50), seed=0, **kw)
    other = build_tiny_model(tmp_path / "other", sample_texts(50), seed=1, **kw)
    from safetensors.torch import load_file

    a, b, c = (load_file(d / "model.safetensors") for d in (model_dir, again, other))
    assert all(torch.equal(a[k], b[k]) for k in a)
    assert not all(torch.equal(a[k], c[k]) for k in a)
    vocab = lambda d: json.loads((d / "tokenizer.json").read_text())["model"]["vocab"]  # noqa: E731
    assert vocab(model_dir) == vocab(again)


def test_caller_rng_is_untouched(tmp_path):
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    build_tiny_model(tmp_path / "m", ["a b c"], vocab_size=300, n_layer=1, n_embd=16, n_head=2)
    assert torch.equal(torch.rand(3), expected)


def test_bad_arguments():
    with pytest.raises(ConfigError, match="non-empty"):
        build_tokenizer([])
    with pytest.raises(ConfigError, match="too small"):
        build_tokenizer(["abc"], vocab_size=100)
    with pytest.raises(ConfigError, match="divisible"):
        build_tiny_model("/tmp/never", ["abc"], n_embd=30, n_head=4)

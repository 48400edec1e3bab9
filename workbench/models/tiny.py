"""Tiny causal LMs built locally: a byte-level BPE tokenizer trained on your text plus a randomly
initialised Qwen2, saved in Hugging Face format. Nothing is downloaded.

    from workbench.models import build_tiny_model
    path = build_tiny_model("runs/tiny", texts=open("corpus.txt").read().splitlines())
    model = AutoModelForCausalLM.from_pretrained(path)      # offline
    tok = AutoTokenizer.from_pretrained(path)

The tokenizer speaks a ChatML-like template (`<|im_start|>role\\n...<|im_end|>\\n`, EOS =
`<|im_end|>`, pad = `<|endoftext|>`) and keeps the agent's tags (`<think>`, `</code>`, ...) as
single tokens, so `decode(encode(x)) == x` and a stop string such as `</code>` always ends on a
token boundary.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path

from workbench.errors import ConfigError

PAD_TOKEN = "<|endoftext|>"
IM_START = "<|im_start|>"
IM_END = "<|im_end|>"
CHAT_TOKENS = (PAD_TOKEN, IM_START, IM_END)
AGENT_TAGS = ("<think>", "</think>", "<code>", "</code>", "<output>", "</output>")
"""The NB-Agent tags, single never-split tokens in the tiny models' tokenizers."""

# Prefix-preserving: rendering messages[:k] (with the generation prompt) is a prefix of
# rendering messages[:k+1]; earlier turns never change with later ones.
CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)


def build_tokenizer(
    texts: Iterable[str],
    vocab_size: int = 512,
    special_tokens: Sequence[str] = AGENT_TAGS,
):
    """Train a byte-level BPE on `texts` and wrap it as a `PreTrainedTokenizerFast`.

    `special_tokens` (default: the agent tags) become single, never-split tokens on top of the
    chat tokens. Byte-level means any text round-trips exactly, even characters never seen.

        tok = build_tokenizer(["<think>hi</think><code>print(1)</code>"], vocab_size=300)
        tok.decode(tok.encode("<code>x</code>"), skip_special_tokens=False) == "<code>x</code>"
    """
    from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers
    from transformers.models.qwen2.tokenization_qwen2 import PRETOKENIZE_REGEX, Qwen2Tokenizer

    texts = [t for t in texts if t]
    if not texts:
        raise ConfigError("build_tokenizer needs some text to train on: pass a non-empty list of strings")
    if vocab_size < 256 + len(CHAT_TOKENS):
        raise ConfigError(f"vocab_size={vocab_size} is too small: a byte-level BPE needs at least 259; use 300 or more")
    # Train with exactly the normalizer and pre-tokenizer Qwen2Tokenizer uses, because that is the
    # class AutoTokenizer rebuilds for a qwen2 model dir: what we train is what loads back.
    tok = Tokenizer(models.BPE())
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(PRETOKENIZE_REGEX), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=list(CHAT_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(texts, trainer)
    model = json.loads(tok.to_str())["model"]
    merges = [tuple(m) if isinstance(m, list) else tuple(m.split(" ")) for m in model["merges"]]
    hf = Qwen2Tokenizer(
        vocab=model["vocab"],
        merges=merges,  # type: ignore[arg-type]  # annotated list[str]; tokenizers' BPE takes (a, b) pairs
        unk_token=None,  # type: ignore[arg-type]  # annotated str; None means no unknown token, as in Qwen2
        eos_token=IM_END,
        pad_token=PAD_TOKEN,
        clean_up_tokenization_spaces=False,
        model_max_length=1 << 30,
    )
    hf.add_tokens([AddedToken(IM_START, special=True, normalized=False)])
    # Tags are regular (non-special) added tokens, as in Qwen3: never split, and they survive
    # `skip_special_tokens=True` in libraries that decode that way.
    extra = [t for t in special_tokens if t not in CHAT_TOKENS]
    hf.add_tokens([AddedToken(t, special=False, normalized=False) for t in extra])
    hf.chat_template = CHAT_TEMPLATE
    return hf


def build_tiny_model(
    out_dir: str | Path,
    texts: Iterable[str],
    *,
    vocab_size: int = 512,
    n_layer: int = 2,
    n_embd: int = 64,
    n_head: int = 2,
    max_positions: int = 2048,
    seed: int = 0,
    special_tokens: Sequence[str] = AGENT_TAGS,
) -> Path:
    """Build a randomly initialised Qwen2 causal LM and its tokenizer; save both to `out_dir`.

    Deterministic: the same texts and seed give the same tokenizer and weights. Returns the path,
    ready for `AutoModelForCausalLM.from_pretrained(path)` or `TransformersPolicy(path)`.

        build_tiny_model("runs/tiny", ["some local text ..."], n_layer=2, n_embd=64)
    """
    import torch
    from transformers import GenerationConfig, Qwen2Config, Qwen2ForCausalLM

    if n_embd % n_head:
        raise ConfigError(f"n_embd={n_embd} must be divisible by n_head={n_head}")
    if (n_embd // n_head) % 2:
        raise ConfigError(f"head size n_embd/n_head={n_embd // n_head} must be even (rotary embeddings)")
    tok = build_tokenizer(texts, vocab_size=vocab_size, special_tokens=special_tokens)
    config = Qwen2Config(
        vocab_size=len(tok),
        hidden_size=n_embd,
        intermediate_size=4 * n_embd,
        num_hidden_layers=n_layer,
        num_attention_heads=n_head,
        num_key_value_heads=n_head,
        max_position_embeddings=max_positions,
        tie_word_embeddings=True,
        bos_token_id=None,
        eos_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id,
    )
    saved_rng = torch.random.get_rng_state()
    try:
        torch.manual_seed(seed)
        model = Qwen2ForCausalLM(config)
    finally:
        torch.random.set_rng_state(saved_rng)  # leave the caller's RNG as it was
    model.generation_config = GenerationConfig(eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    tok.save_pretrained(out)
    return out


def sample_texts(n: int = 200, seed: int = 0) -> list[str]:
    """A small synthetic corpus in the agent's format (think / code / output), for tokenizers
    of tests and demos that have no text of their own. Deterministic from `seed`.

        build_tiny_model("runs/tiny", sample_texts())
    """
    import random

    rng = random.Random(seed)
    topics = ["the capital of France", "the boiling point of water", "who wrote Hamlet", "2 + 2", "the largest planet"]
    answers = ["Paris", "100 degrees Celsius", "William Shakespeare", "4", "Jupiter"]
    texts = []
    for _ in range(n):
        i = rng.randrange(len(topics))
        q, a = topics[i], answers[i]
        texts.append(
            f"<think>I need to find {q}. Let me search.</think>\n"
            f"<code>hits = search({q!r})\nprint(hits[0])</code>\n"
            f"<output>{a} is the answer to {q}.</output>\n"
            f"<think>The notepad says {a}.</think>\n<code>answer({a!r})</code>"
        )
    return texts


__all__ = ["AGENT_TAGS", "CHAT_TEMPLATE", "build_tiny_model", "build_tokenizer", "sample_texts"]

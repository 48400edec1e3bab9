"""`TokenizerCodec`: the `Codec` protocol over a Hugging Face tokenizer.

    codec = TokenizerCodec(AutoTokenizer.from_pretrained("runs/tiny"))
    ids = codec.chat([{"role": "user", "content": "2+2?"}])   # chat template + generation prompt
    codec.decode(codec.encode(text)) == text                   # byte-level tokenizers round-trip

Without a chat template, `chat` falls back to the plain format `ByteCodec` uses:
`<|role|>\\n{content}\\n` per message, then `<|assistant|>\\n`.

With one, `codec.framing` is the text the template puts between an episode's turns (derived from
the template, `workbench.policies.chat_framing`) and `codec.end_of_turn_ids` the ids that end the
model's turn (the template's end-of-turn token, then EOS), for policies to stop on:

    codec.framing.after_assistant       # "<|im_end|>\\n<|im_start|>user\\n" for ChatML
    codec.end_of_turn_ids               # (id of <|im_end|>,)

Text is made valid Unicode before it reaches the tokenizer (lone surrogates in kernel output or
notepad values become U+FFFD, `workbench.safetext`), so encoding never raises on them.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cached_property
from typing import Any

from workbench.errors import ConfigError
from workbench.policies.chat_framing import ChatFraming
from workbench.safetext import safe_text


def plain_chat_text(messages: Sequence[dict[str, str]]) -> str:
    """The documented fallback rendering for tokenizers without a chat template."""
    return "".join(f"<|{m['role']}|>\n{m['content']}\n" for m in messages) + "<|assistant|>\n"


def _check_messages(messages: Sequence[dict[str, str]]) -> None:
    for i, m in enumerate(messages):
        if not isinstance(m, dict) or "role" not in m or "content" not in m:
            raise ConfigError(f"message {i} must be a dict with 'role' and 'content', got {m!r}")


class TokenizerCodec:
    """Encode/decode with a Hugging Face tokenizer, exactly: no special tokens are added on
    `encode`, none are skipped on `decode`, and no tokenization spaces are cleaned up."""

    def __init__(self, tokenizer: Any) -> None:
        self.tokenizer = tokenizer

    @property
    def eos_token_id(self) -> int | None:
        eos = self.tokenizer.eos_token_id
        return None if eos is None else int(eos)

    @property
    def has_chat_template(self) -> bool:
        return bool(self.chat_template)

    @property
    def chat_template(self) -> str | None:
        template = getattr(self.tokenizer, "chat_template", None)
        return template if isinstance(template, str) and template else None

    @cached_property
    def framing(self) -> ChatFraming | None:
        """The chat template's framing between turns; None without a template."""
        template = self.chat_template
        if template is None:
            return None
        return ChatFraming.derive(self._render, self._special_tokens(), template)

    @cached_property
    def end_of_turn_ids(self) -> tuple[int, ...]:
        """Ids that end the model's turn: the template's end-of-turn token (if any), then EOS."""
        framing = self.framing
        ids = [] if framing is None or not framing.end_of_turn else self.encode(framing.end_of_turn)
        eos = self.eos_token_id
        return tuple(ids[:1]) + ((eos,) if eos is not None and eos not in ids[:1] else ())

    def _special_tokens(self) -> list[str]:
        tokens = set(getattr(self.tokenizer, "all_special_tokens", []) or [])
        added = getattr(self.tokenizer, "added_tokens_decoder", {}) or {}
        tokens.update(str(getattr(t, "content", t)) for t in added.values() if getattr(t, "special", False))
        return sorted(tokens)

    def _render(self, messages: Sequence[dict[str, str]], add_generation_prompt: bool) -> str:
        text = self.tokenizer.apply_chat_template(
            list(messages), tokenize=False, add_generation_prompt=add_generation_prompt
        )
        return str(text)

    def chat_text(self, messages: Sequence[dict[str, str]]) -> str:
        _check_messages(messages)
        messages = [{**m, "content": safe_text(m["content"])} if isinstance(m["content"], str) else m for m in messages]
        if not self.has_chat_template:
            return plain_chat_text(messages)
        return self._render(messages, True)

    def chat(self, messages: Sequence[dict[str, str]]) -> list[int]:
        return self.encode(self.chat_text(messages))

    def encode(self, text: str) -> list[int]:
        return list(self.tokenizer.encode(safe_text(text), add_special_tokens=False))

    def decode(self, ids: Sequence[int]) -> str:
        return str(self.tokenizer.decode(list(ids), skip_special_tokens=False, clean_up_tokenization_spaces=False))


__all__ = ["TokenizerCodec", "plain_chat_text"]

"""Codecs encode text with lone surrogates (as U+FFFD) instead of raising: observations and notepad
text from a kernel reach the tokenizer whatever they hold."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from workbench.policies.base import ByteCodec
from workbench.policies.codec import TokenizerCodec
from workbench.safetext import REPLACEMENT, safe_text

any_text = st.lists(st.one_of(st.characters(), st.characters(categories=["Cs"])), max_size=60).map("".join)


@pytest.fixture(scope="module")
def codec() -> TokenizerCodec:
    from workbench.models.tiny import build_tokenizer

    return TokenizerCodec(build_tokenizer(["<think>hi</think><code>print(1)</code> café"], vocab_size=300))


def test_observation_text_with_surrogates_encodes(codec):
    text = "<output>\udced\udca0\udc80 and \ud800</output>"
    for c in (codec, ByteCodec()):
        assert c.decode(c.encode(text)) == safe_text(text)
        assert REPLACEMENT in c.decode(c.encode(text))


def test_chat_messages_with_surrogates_encode(codec):
    messages = [{"role": "user", "content": "notepad: fact \udcff"}]
    for c in (codec, ByteCodec()):
        assert f"fact {REPLACEMENT}" in c.decode(c.chat(messages))


@settings(max_examples=300, deadline=None)
@given(text=any_text)
def test_any_text_encodes_to_its_safe_form(codec, text):
    for c in (codec, ByteCodec()):
        assert c.decode(c.encode(text)) == c.decode(c.encode(safe_text(text)))
    assert ByteCodec().decode(ByteCodec().encode(text)) == safe_text(text)

"""A chat template's framing between turns, derived from the template itself, and the end-of-turn ids."""

from __future__ import annotations

import copy

import pytest
from tokenizers import AddedToken

from workbench.errors import ConfigError
from workbench.models import build_tokenizer, sample_texts
from workbench.models.tiny import CHAT_TEMPLATE
from workbench.policies.base import ByteCodec
from workbench.policies.chat_framing import CONTINUATION, ChatFraming, end_of_turn_ids, resolve_framing
from workbench.policies.codec import TokenizerCodec

GEMMA_LIKE = (  # turns end with <end_of_turn>, the model's role is "model", no system role of its own
    "{{ bos_token }}{% for message in messages %}{% set role = 'model' if message['role'] == 'assistant' else 'user' %}"
    "{{ '<start_of_turn>' + role + '\\n' + message['content'] | trim + '<end_of_turn>\\n' }}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<start_of_turn>model\\n' }}{% endif %}"
)
TOOL_CHATML = (
    "{%- for m in messages %}{%- if m.role == 'tool' %}{{- '<|im_start|>tool\\n' + m.content + '<|im_end|>\\n' }}"
    "{%- else %}{{- '<|im_start|>' + m.role + '\\n' + m.content + '<|im_end|>\\n' }}{%- endif %}{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
)
DROPS_CONTENT = "{% for m in messages %}<|im_start|>{{ m.role }}<|im_end|>{% endfor %}<|im_start|>assistant\n"


@pytest.fixture(scope="module")
def base():
    return build_tokenizer(sample_texts(30), vocab_size=300)


def codec_with(base, template: str | None, specials: tuple[str, ...] = (), eos: str | None = None) -> TokenizerCodec:
    tok = copy.deepcopy(base)
    if specials:
        tok.add_tokens([AddedToken(t, special=True, normalized=False) for t in specials])
    if eos:
        tok.eos_token = eos
    tok.chat_template = template
    return TokenizerCodec(tok)


def test_chatml_framing_and_end_of_turn(base):
    codec = codec_with(base, CHAT_TEMPLATE)
    assert codec.framing == ChatFraming(
        observation_role="user",
        after_assistant="<|im_end|>\n<|im_start|>user\n",
        after_observation="<|im_end|>\n<|im_start|>assistant\n",
        after_task="<|im_end|>\n<|im_start|>assistant\n",
        end_of_turn="<|im_end|>",
    )
    assert codec.end_of_turn_ids == (codec.tokenizer.convert_tokens_to_ids("<|im_end|>"),)
    assert codec.framing.lead(ended_turn=True) == "\n<|im_start|>user\n"  # the sample carries its own <|im_end|>


def test_a_wrong_eos_still_stops_at_the_end_of_turn(base):
    # SmolLM2's GGUF names <|im_start|> as EOS: the template's <|im_end|> comes first, then that EOS
    codec = codec_with(base, CHAT_TEMPLATE, eos="<|im_start|>")
    ids = codec.tokenizer.convert_tokens_to_ids(["<|im_end|>", "<|im_start|>"])
    assert codec.end_of_turn_ids == tuple(ids)


def test_a_template_with_a_tool_role_frames_observations_as_tool_messages(base):
    framing = codec_with(base, TOOL_CHATML).framing
    assert framing is not None and framing.observation_role == "tool"
    assert framing.after_assistant == "<|im_end|>\n<|im_start|>tool\n"


def test_other_turn_markers_and_trimmed_contents(base):
    specials = ("<bos>", "<start_of_turn>", "<end_of_turn>")
    tok_codec = codec_with(base, GEMMA_LIKE, specials, eos="<end_of_turn>")
    tok_codec.tokenizer.bos_token = "<bos>"
    framing = tok_codec.framing
    assert framing is not None and framing.trims_content and framing.end_of_turn == "<end_of_turn>"
    assert framing.after_assistant == "<end_of_turn>\n<start_of_turn>user\n"
    assert framing.after_observation == "<end_of_turn>\n<start_of_turn>model\n"
    assert framing.content("\n<output>\n4\n</output>\n") == "<output>\n4\n</output>"
    assert tok_codec.end_of_turn_ids == (tok_codec.tokenizer.convert_tokens_to_ids("<end_of_turn>"),)


def test_a_template_that_drops_contents_is_refused_with_the_fix(base):
    codec = codec_with(base, DROPS_CONTENT)
    with pytest.raises(ConfigError, match="framing='continuation'"):
        _ = codec.framing


def test_resolving_the_framing(base):
    tiny = codec_with(base, CHAT_TEMPLATE)
    assert resolve_framing(tiny, "auto") == CONTINUATION  # workbench's tiny models keep their format
    assert resolve_framing(tiny, "template") == tiny.framing
    assert resolve_framing(codec_with(base, TOOL_CHATML), "auto").observation_role == "tool"
    assert resolve_framing(codec_with(base, TOOL_CHATML), "continuation") == CONTINUATION
    plain = codec_with(base, None)
    assert plain.framing is None and resolve_framing(plain, "auto") == CONTINUATION
    assert plain.end_of_turn_ids == (plain.eos_token_id,)
    with pytest.raises(ConfigError, match="framing='auto' or 'continuation'"):
        resolve_framing(ByteCodec(), "template")
    assert resolve_framing(ByteCodec(), "auto") == CONTINUATION and end_of_turn_ids(ByteCodec()) == (256,)

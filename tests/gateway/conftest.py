"""Gateway fixtures: a ChatML tokenizer (the demo's tiny model's template), scripted policies over it,
and a running gateway. Everything is local; the clients are real `openai` clients over loopback."""

from __future__ import annotations

import pytest

from workbench.gateway import ModelGateway
from workbench.policies import ScriptedPolicy
from workbench.policies.codec import TokenizerCodec


@pytest.fixture(scope="session")
def chatml_tokenizer():
    from workbench.models import build_tokenizer, sample_texts

    return build_tokenizer(sample_texts(30), vocab_size=320)


@pytest.fixture(scope="session")
def chatml_codec(chatml_tokenizer) -> TokenizerCodec:
    return TokenizerCodec(chatml_tokenizer)


def echo_policy(codec) -> ScriptedPolicy:
    """Answers "turn N" (N = how many of its own replies the prompt holds), so a test can see the turn."""
    return ScriptedPolicy(lambda _context, turn: f"turn {turn}", codec=codec, name="echo")


@pytest.fixture
def gateway(chatml_codec, tmp_path):
    from workbench.store import Store

    with Store(tmp_path / "run") as store, ModelGateway(echo_policy(chatml_codec), store=store) as gw:
        gw.test_store = store  # type: ignore[attr-defined]
        yield gw

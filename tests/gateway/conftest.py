"""Gateway fixtures: a ChatML tokenizer (the demo's tiny model's template), scripted policies over it,
and a running gateway. Everything is local; the clients are real `openai` clients over loopback."""

from __future__ import annotations

import pytest
from gateway_helpers import echo_policy

from workbench.gateway import ModelGateway
from workbench.policies.codec import TokenizerCodec


@pytest.fixture(scope="session")
def chatml_tokenizer():
    from workbench.models import build_tokenizer, sample_texts

    return build_tokenizer(sample_texts(30), vocab_size=320)


@pytest.fixture(scope="session")
def chatml_codec(chatml_tokenizer) -> TokenizerCodec:
    return TokenizerCodec(chatml_tokenizer)


@pytest.fixture
def gateway(chatml_codec, tmp_path):
    from workbench.store import Store

    with Store(tmp_path / "run") as store, ModelGateway(echo_policy(chatml_codec), store=store) as gw:
        gw.test_store = store  # type: ignore[attr-defined]
        yield gw

"""Fixtures for the policy tests: one tiny local model per session (built, never downloaded).

Other layers can build the same model with `workbench.models.build_tiny_model(dir, sample_texts())`.
"""

from __future__ import annotations

import pytest
import torch

from workbench.models import build_tiny_model, sample_texts


@pytest.fixture(autouse=True)
def _one_torch_thread():
    # A 64-wide model gains nothing from threads; on a busy 2-core box they oversubscribe badly.
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory):
    return build_tiny_model(tmp_path_factory.mktemp("tiny-model"), sample_texts(), vocab_size=400, seed=0)


@pytest.fixture(scope="session")
def tiny_policy(tiny_model_dir):
    from workbench.policies import TransformersPolicy

    return TransformersPolicy(tiny_model_dir, device="cpu", batch_window_ms=30)


@pytest.fixture
def chat_prompts(tiny_policy):
    questions = ["What is the capital of France?", "hi", "Which planet is the largest? Search and answer."]
    return [tiny_policy.codec.chat([{"role": "user", "content": q}]) for q in questions]

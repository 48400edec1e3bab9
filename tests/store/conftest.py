"""Fixtures for the store tests: realistic trajectories built from the real schema."""

from __future__ import annotations

from pathlib import Path

import pytest
from store_helpers import make_trajectory

from workbench.store import Store


@pytest.fixture
def make_traj():
    return make_trajectory


@pytest.fixture
def store(tmp_path: Path):
    with Store(tmp_path / "run") as s:
        yield s

"""Fixtures for the store tests: realistic trajectories built from the real schema."""

from __future__ import annotations

from pathlib import Path

import pytest

from workbench.store import Store


from store_helpers import make_trajectory  # noqa: F401


@pytest.fixture
def make_traj():
    return make_trajectory


@pytest.fixture
def store(tmp_path: Path):
    with Store(tmp_path / "run") as s:
        yield s

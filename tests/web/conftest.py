"""Fixtures for the browse tests: a small world and its site, and the misbehaving server."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest
from web_trouble import serve_trouble

from workbench.worlds import make_world
from workbench.worlds.site import world_site


@pytest.fixture
def trouble():
    """Base URL of the misbehaving server."""
    with serve_trouble() as base:
        yield base


@pytest.fixture(scope="session")
def world():
    return make_world(seed=3, size="tiny")


@pytest.fixture(scope="session")
def site(world):
    return world_site(world)


@pytest.fixture(scope="session")
def served(site):
    """(site, base URL of the site served on loopback)."""
    with site.serve() as base:
        yield site, base


@pytest.fixture
def sock_dir():
    path = Path(tempfile.mkdtemp(prefix="wbw", dir="/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)

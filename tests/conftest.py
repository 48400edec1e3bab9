"""Suite-wide: every test marked `vllm` runs in the xdist group "vllm" (with `--dist loadgroup`
they share one worker, so the session's one vLLM engine starts once). This file also puts
tests/ on sys.path, so any test can `from vllm_fixtures import *`."""

from __future__ import annotations

import pytest


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.get_closest_marker("vllm") and not item.get_closest_marker("xdist_group"):
            item.add_marker(pytest.mark.xdist_group("vllm"))

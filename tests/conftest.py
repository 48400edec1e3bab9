"""Suite-wide: every test marked `vllm` runs in the xdist group "vllm", and xdist groups hold under
pytest 9 (with `--dist loadgroup` a group's tests share one worker, so the session's one vLLM
engine and one smoke demo start once). The session fixtures of tests/vllm_fixtures.py,
tests/demo_fixtures.py and tests/model_fixtures.py are imported here, so each exists once per
session (imported into a test module, that module would get its own copy). pytest puts tests/ on
sys.path for this file, so any test can import helpers from those modules."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from demo_fixtures import fast_demo  # noqa: F401
from model_fixtures import smollm2_models  # noqa: F401
from vllm_fixtures import vllm_engine, vllm_model_dir, vllm_policy, vllm_tasks, vllm_tools, vllm_world  # noqa: F401


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.get_closest_marker("vllm") and not item.get_closest_marker("xdist_group"):
            item.add_marker(pytest.mark.xdist_group("vllm"))
        if item.get_closest_marker("vllm"):
            # vLLM's engine warns about its own environment as it starts (thread counts it sets, deprecated
            # torch attributes its kernel scan reads): shown in the summary, not errors.
            item.add_marker(pytest.mark.filterwarnings("default"))
    if getattr(config.option, "loadgroup", False):  # an xdist worker under --dist loadgroup
        for item in items:
            _join_xdist_group(item)


def _join_xdist_group(item: pytest.Item) -> None:
    """Suffix the node id with `@group`, which is how xdist's scheduler sees a group. xdist 3.8 writes
    the suffixed id to `item._nodeid`, which pytest 9 no longer reads (the id lives in `item._id`),
    so without this every group's tests spread over the workers like ungrouped ones."""
    names = sorted(
        {str(m.args[0] if m.args else m.kwargs.get("name", "default")) for m in item.iter_markers("xdist_group")}
    )
    suffix = "@" + "_".join(names)
    if not names or item.nodeid.endswith(suffix):
        return
    from _pytest.nodeid import NodeId

    item._id = NodeId.parse(item.nodeid + suffix)


@pytest.fixture(scope="session", autouse=True)
def torch_threads(worker_id) -> Iterator[int]:
    """Torch threads of this session: under xdist each worker gets its share of the cores (2 workers on 2
    cores: one each). More threads than
    free cores spin against each other: beside one busy process on 2 cores, a SmolLM2 SFT step (4 rows of 280
    tokens) took 64 s at 2 threads, 21 s at 1. Pass it to what sets its own (`DemoConfig.torch_threads`)."""
    import torch

    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    if worker_id == "master" or workers <= 1:
        yield torch.get_num_threads()
        return
    threads = max(1, (os.cpu_count() or 1) // workers)
    before = torch.get_num_threads()
    torch.set_num_threads(threads)  # not OMP_NUM_THREADS: child processes (a vLLM server) choose their own
    yield threads
    torch.set_num_threads(before)


@pytest.fixture(scope="session")
def counting_store():
    """A real `Store` class that also counts the writes of each trajectory id (`.writes`)."""
    from workbench.store import Store

    class CountingStore(Store):
        def __init__(self, *args, **kwargs) -> None:
            super().__init__(*args, **kwargs)
            self.writes: dict[str, int] = {}

        def write_many(self, trajs):
            trajs = list(trajs)
            for t in trajs:
                self.writes[t.id] = self.writes.get(t.id, 0) + 1
            return super().write_many(trajs)

    return CountingStore

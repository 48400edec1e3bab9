"""One Ray cluster for the whole test session, started only when a cluster test asks for it.

It is two simulated nodes on this machine (`ray.cluster_utils.Cluster`, one CPU each: two in all,
as `ray.init(num_cpus=2)` would give), so placement across nodes is tested on the same cluster.
Every test here carries the xdist group "ray": with `--dist loadgroup` one xdist worker owns it.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

ROOT = str(Path(__file__).resolve().parents[2])
if ROOT not in sys.path:  # `tests.cluster.toolkit` is imported by name here and on the workers (cwd: the repo)
    sys.path.insert(0, ROOT)

# after the sys.path line above, on purpose
from tests.cluster.toolkit import SECRET, SECRET_VAR  # noqa: E402
from workbench.agent.config import AgentConfig  # noqa: E402
from workbench.worlds import make_world  # noqa: E402


@pytest.fixture(scope="session")
def ray_cluster():
    """`(ray, cluster)`: the driver connected to a 2-node local cluster."""
    import ray
    from ray.cluster_utils import Cluster

    from workbench.cluster._ray import startup_share

    os.environ[SECRET_VAR] = SECRET  # as `export` before `ray start` on every node
    try:
        with startup_share():
            cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False})
            cluster.add_node(num_cpus=1)
            cluster.wait_for_nodes()
            ray.init(address=cluster.address, log_to_driver=False)
    finally:
        del os.environ[SECRET_VAR]  # the driver no longer has it: the workers read their own
    yield ray, cluster
    ray.shutdown()
    cluster.shutdown()


@pytest.fixture(scope="session")
def world():
    return make_world(seed=0, size="small")


@pytest.fixture(scope="session")
def corpus_path(world, tmp_path_factory):
    path = tmp_path_factory.mktemp("world") / "corpus.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in world.corpus()))
    return path


@pytest.fixture(scope="session")
def tasks(world):
    by_hops = {h: [t for t in world.tasks("test") if t.metadata["hops"] == h] for h in (1, 2, 3)}
    return by_hops[1][:2] + by_hops[2][:2] + by_hops[3][:2]


@pytest.fixture(scope="session")
def agent_config():
    return AgentConfig(max_steps=6, max_context_tokens=16384, seed=7)

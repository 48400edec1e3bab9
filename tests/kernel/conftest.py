"""Fixtures for kernel tests: one shared sandboxed kernel for tests that do not destroy it."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from kernel_starts import STARTS

from workbench.kernel import Kernel
from workbench.kernel.async_kernel import StartMethod

HOST_ENV_SECRET = "wb-test-secret-5f1e"


@pytest.fixture(scope="module")
def secret_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A world-readable dir holding a root-only file (bound into the shared kernel)."""
    d = tmp_path_factory.mktemp("bound")
    os.chmod(d, 0o755)
    (d / "public.txt").write_text("hello")
    os.chmod(d / "public.txt", 0o644)
    (d / "secret.txt").write_text("root-only")
    os.chmod(d / "secret.txt", 0o600)
    return d


def _started(secret_dir: Path, root: Path, start: StartMethod | None) -> Kernel:
    os.environ["WB_TEST_HOST_SECRET"] = HOST_ENV_SECRET  # must not reach the sandbox
    k = Kernel(root=root, output_cap=2000, extra_ro_binds=[f"{secret_dir}:/data"], env={"WB_EXTRA": "yes"}, start=start)
    try:
        k.start()
    finally:
        os.environ.pop("WB_TEST_HOST_SECRET", None)
    return k


@pytest.fixture(scope="module")
def kernel(secret_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kernel]:
    k = _started(secret_dir, tmp_path_factory.mktemp("kernels"), None)
    yield k
    k.close()


@pytest.fixture(scope="module", params=STARTS)
def each_start(
    request: pytest.FixtureRequest, secret_dir: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Kernel]:
    """The shared kernel's twin, once per start method (zygote, exec): for the isolation tests."""
    k = _started(secret_dir, tmp_path_factory.mktemp("kernels"), request.param)
    assert k.aio.start_method == request.param
    yield k
    k.close()


@pytest.fixture(scope="module")
def host_env_secret() -> str:
    return HOST_ENV_SECRET

"""`make_executor`: the executor a CLI or config names ("local" or "ray"), built the same way."""

from __future__ import annotations

from typing import Any

from workbench.errors import ConfigError

EXECUTORS = ("local", "ray")


def make_executor(kind: str = "local", tools: Any = None, *, concurrency: int = 4, ray_address: str | None = None,
                  **ray_options: Any) -> Any:
    """`LocalExecutor(tools, concurrency)`, or a `RayExecutor` joining `ray_address` ("auto": the
    cluster `ray start` runs here; None: start a local one) with `concurrency` kernels per worker.
    `ray_options` (mode, workers, cpus_per_kernel, strategy, retries) go to `RayExecutor`."""
    if kind == "local":
        if ray_address is not None or ray_options:
            raise ConfigError("--ray-address and Ray options need --executor ray")
        from workbench.agent.local import LocalExecutor

        return LocalExecutor(tools, concurrency=concurrency)
    if kind == "ray":
        from workbench.cluster.executor import RayExecutor

        ray_options.setdefault("kernels_per_worker", concurrency)
        return RayExecutor(tools, address=ray_address, **ray_options)
    raise ConfigError(f"executor must be one of {', '.join(EXECUTORS)}, got {kind!r}")


__all__ = ["EXECUTORS", "make_executor"]

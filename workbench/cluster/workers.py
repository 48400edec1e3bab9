"""`RayWorkers`: kernel-worker actors placed on a Ray cluster, and their lifetime.

    workers = RayWorkers.start({"default": ToolsSpec(...)}, workers=4, kernels_per_worker=4,
                               cpus_per_kernel=0.5, strategy="SPREAD", address="auto")
    workers.stats()       # per worker: node, warm, in_use, high_water, started, failed, alive
    workers.shutdown()

Placement: one placement-group bundle per worker of `kernels_per_worker × cpus_per_kernel` CPUs,
with Ray's strategy (`SPREAD`: across nodes where possible, `STRICT_SPREAD`: one worker per node,
`PACK` / `STRICT_PACK`: together); `strategy=None` places actors without a group. `address`: None
joins the cluster this process is connected to, else starts a local one; "auto" joins the cluster
`ray start` runs on this machine; "ray://…" or "HOST:PORT" join that one.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from workbench.cluster._ray import actor_died_errors, require_ray, startup_share
from workbench.errors import ConfigError, PoolError
from workbench.registrations import carry

if TYPE_CHECKING:
    from ray.util.placement_group import PlacementGroup

    from workbench.agent.config import AgentConfig
    from workbench.cluster.spec import WorkerTools

STRATEGIES = ("SPREAD", "STRICT_SPREAD", "PACK", "STRICT_PACK")


def connect(address: str | None = None, **init_options: Any) -> Any:
    """Connect this process to Ray (once): `address` as `ray.init` takes it. Returns the module."""
    ray = require_ray()
    if not ray.is_initialized():
        options = {"log_to_driver": False, **init_options}
        if address is None:
            options.setdefault("include_dashboard", False)
        with startup_share():  # a local start may start a node here
            ray.init(address=address, **options)
    return ray


@dataclass
class Worker:
    """The driver's view of one actor."""

    handle: Any  # the actor handle of `worker_class()`, a class Ray makes at run time
    index: int
    info: dict[str, Any] = field(default_factory=dict)  # node, worker, actor_id, host, pid
    alive: bool = True
    in_flight: int = 0
    high_water: int = 0
    last: dict[str, Any] = field(default_factory=dict)  # the last stats it gave

    @property
    def name(self) -> str:
        return str(self.info.get("worker", f"worker-{self.index}"))

    def lineage(self) -> dict[str, Any]:
        return {k: self.info[k] for k in ("node", "worker", "actor_id", "host") if k in self.info}


class RayWorkers:
    """Started kernel-worker actors; see the module docstring."""

    def __init__(
        self,
        workers: list[Worker],
        kernels_per_worker: int,
        placement_group: PlacementGroup | None = None,
        tools: Mapping[str, WorkerTools] | None = None,
    ) -> None:
        self.workers = workers
        self.tools = dict(tools or {})  # the tool sets' specs, as sent
        self.kernels_per_worker = kernels_per_worker
        self.placement_group = placement_group

    @classmethod
    def start(
        cls,
        tools: Mapping[str, WorkerTools],
        *,
        workers: int = 1,
        kernels_per_worker: int = 2,
        cpus_per_kernel: float = 0.5,
        strategy: str | None = "SPREAD",
        address: str | None = None,
        warm: AgentConfig | None = None,
        timeout: float = 300.0,
        init_options: Mapping[str, Any] | None = None,
    ) -> RayWorkers:
        """Place and start `workers` actors, each warming `kernels_per_worker` kernels."""
        if workers < 1 or kernels_per_worker < 1:
            raise ConfigError(f"workers and kernels_per_worker must be >= 1, got {workers} and {kernels_per_worker}")
        if cpus_per_kernel < 0:
            raise ConfigError(f"cpus_per_kernel must be >= 0, got {cpus_per_kernel}")
        if strategy is not None and strategy not in STRATEGIES:
            raise ConfigError(f"strategy must be one of {', '.join(STRATEGIES)} or None, got {strategy!r}")
        registrations = carry()  # what the driver registered reaches every worker (see workbench.registrations)
        ray = connect(address, **dict(init_options or {}))
        from workbench.cluster.actor import worker_class

        cpus = kernels_per_worker * cpus_per_kernel
        group, options = _placement(ray, workers, cpus, strategy, timeout)
        actor = worker_class()
        try:
            handles = [
                actor.options(**options[i]).remote(dict(tools), kernels_per_worker, f"worker-{i}", registrations)
                for i in range(workers)
            ]
        except TypeError as exc:  # a tool set that cannot be pickled
            raise ConfigError(
                f"the tool sets cannot be sent to the workers ({exc}); describe each with "
                "ToolsSpec('module:function', ...) so every worker builds its own"
            ) from None
        pool = cls([Worker(h, i) for i, h in enumerate(handles)], kernels_per_worker, group, tools)
        try:
            infos = ray.get([h.start.remote(warm) for h in handles], timeout=timeout)
        except Exception as exc:
            pool.shutdown()
            raise PoolError(f"the kernel workers did not start: {exc}") from None
        for worker, info in zip(pool.workers, infos, strict=True):
            worker.info = info
        return pool

    @property
    def alive(self) -> list[Worker]:
        return [w for w in self.workers if w.alive]

    def stats(self, timeout: float = 10.0) -> list[dict[str, Any]]:
        """Per worker: node, worker, warm, in_use, high_water, started, failed, episodes, alive."""
        ray = require_ray()
        refs = {w.index: w.handle.stats.remote() for w in self.alive}
        out = []
        for w in self.workers:
            if w.index in refs:
                try:
                    w.last = ray.get(refs[w.index], timeout=timeout)
                except actor_died_errors():
                    w.alive = False
                except ray.exceptions.GetTimeoutError:
                    pass  # busy beyond reason: its last figures stand
            row = {**w.info, **w.last, "alive": w.alive, "in_flight": w.in_flight, "driver_high_water": w.high_water}
            out.append(row)
        return out

    def shutdown(self, timeout: float = 30.0) -> None:
        """Close every worker's kernels, then end the actors and the placement group."""
        ray = require_ray()
        refs = [w.handle.shutdown.remote() for w in self.alive]
        deadline = time.monotonic() + timeout
        for ref in refs:
            try:
                ray.get(ref, timeout=max(0.1, deadline - time.monotonic()))
            except Exception:
                pass
        for w in self.workers:
            try:
                ray.kill(w.handle)
            except Exception:
                pass
            w.alive = False
        if self.placement_group is not None:
            try:
                ray.util.remove_placement_group(self.placement_group)
            except Exception:
                pass
            self.placement_group = None


def _placement(
    ray: Any, workers: int, cpus: float, strategy: str | None, timeout: float
) -> tuple[PlacementGroup | None, list[dict[str, Any]]]:
    """Each worker's actor options; with a strategy, a placement group reserved for all of them first (a
    ConfigError naming what to change when the cluster has no room within `timeout`)."""
    if strategy is None:
        return None, [{"num_cpus": cpus} for _ in range(workers)]
    from ray.util.placement_group import placement_group
    from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

    group = placement_group([{"CPU": cpus}] * workers if cpus > 0 else [{}] * workers, strategy=strategy)
    try:
        ray.get(group.ready(), timeout=timeout)
    except ray.exceptions.GetTimeoutError:
        ray.util.remove_placement_group(group)
        raise ConfigError(
            f"the cluster found no room for {workers} worker(s) × {cpus:g} CPUs with strategy {strategy} "
            f"within {timeout:g} s (it has {ray.available_resources().get('CPU', 0):g} CPUs free); use "
            "fewer workers, kernels_per_worker or cpus_per_kernel, another strategy, or add nodes"
        ) from None
    options = [
        {
            "num_cpus": cpus,
            "scheduling_strategy": PlacementGroupSchedulingStrategy(group, placement_group_bundle_index=i),
        }
        for i in range(workers)
    ]
    return group, options


__all__ = ["STRATEGIES", "RayWorkers", "Worker", "connect"]

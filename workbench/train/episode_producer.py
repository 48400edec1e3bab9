"""Overlapped rollouts: episodes keep running while the trainer trains, staleness bounded by admission.

    weights = VersionedWeights(rollout_model.load_state_dict)
    producer = EpisodeProducer(episodes, lambda seed: weights.policy(backend(seed)),
                               Admission(max_staleness=2, groups_per_step=B), next_batch=draw_tasks, finish=score)
    producer.start(seeds=[s0, s1, s2])                       # one per wave admitted at version 0 (k + 1)
    trajs, wave = producer.take(version=0, timeout=600)      # step 0's B groups, FIFO, waiting if needed
    ...optimizer step...
    weights.publish(1, state_dict); producer.set_version(1, seed=s3)   # loaded at the rollouts' next turn
    producer.close()

The producer runs on workbench's background event loop. Capacity under the admission rule only
grows in whole steps (B groups at each version), so it starts *waves*: one optimizer step's worth of
groups (the tasks `next_batch()` returns, B·G rollouts) in one episode-runner call, up to k + 1 waves
at once. Wave w is what step w trains on, so consumption is FIFO and nothing is ever dropped; with
k = 0 there is one wave at a time, started after the previous step: the synchronous trainer.

`VersionedWeights` guards the rollout model: a trainer publishes weights after each optimizer step,
and they are loaded at the next turn boundary (a `generate` call of any wave's `VersionedPolicy`),
once the turns already generating have finished, so no turn mixes two versions; each `Completion`
carries the version that sampled it, which the episode loops record on the `Step`. An episode may
span versions. Each wave samples from its own backend seeded by the trainer (`seed` per wave), so
with k = 0 the draws are the synchronous trainer's.
"""

from __future__ import annotations

import asyncio
import collections
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

from workbench.contracts import EpisodeRunner
from workbench.errors import TrainingError
from workbench.kernel.sync import background_loop
from workbench.policies.base import Codec, Completion, Policy, SamplingParams
from workbench.train.admission import Admission
from workbench.trajectory import Task, Trajectory


class VersionedWeights:
    """The weights the rollouts sample from, replaced by a trainer between turns.

    `apply(weights)` loads published weights into the rollout model (e.g. `model.load_state_dict`);
    `policy(inner)` is a `Policy` over `inner` (a backend over that model) that loads pending weights
    at its turn boundaries and stamps each `Completion` with its version. Every such policy shares
    the gate: weights change only while no turn of any of them is generating."""

    def __init__(self, apply: Callable[[Any], None], version: int = 0) -> None:
        self.apply, self.version = apply, version
        self._published: tuple[int, Any] | None = None
        self._lock = threading.Lock()
        self._inflight = 0
        self._idle: asyncio.Condition | None = None
        self.sync_seconds: list[float] = []  # time spent loading each published version

    def publish(self, version: int, weights: Any) -> None:
        """Called by the trainer (any thread): weights of `version`, loaded before the next turn."""
        with self._lock:
            self._published = (version, weights)

    def policy(self, inner: Policy) -> VersionedPolicy:
        return VersionedPolicy(self, inner)

    async def turn(self, inner: Policy, prompts: Sequence[list[int]], params: SamplingParams) -> list[Completion]:
        idle = self._idle = self._idle or asyncio.Condition()
        async with idle:
            await idle.wait_for(lambda: self._inflight == 0 or not self._pending())
            self._load_pending()
            self._inflight += 1
            version = self.version
        try:
            outs = await inner.generate(prompts, params)
        finally:
            async with idle:
                self._inflight -= 1
                idle.notify_all()
        for out in outs:
            out.policy_version = version
        return outs

    def _pending(self) -> bool:
        with self._lock:
            return self._published is not None and self._published[0] > self.version

    def _load_pending(self) -> None:
        with self._lock:
            published, self._published = self._published, None
        if published is not None and published[0] > self.version:
            t0 = time.perf_counter()
            self.apply(published[1])
            self.version = published[0]
            self.sync_seconds.append(time.perf_counter() - t0)


class VersionedPolicy:
    """A `Policy` over `inner` whose turns go through `VersionedWeights`' gate (see there)."""

    def __init__(self, weights: VersionedWeights, inner: Policy) -> None:
        self.weights, self.inner = weights, inner

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def codec(self) -> Codec:
        return self.inner.codec

    @property
    def context_size(self) -> int | None:
        return self.inner.context_size

    @property
    def agent_settings(self) -> dict[str, Any]:
        """The agent settings the inner policy's model carries (e.g. the compact prompt it trains with)."""
        return dict(getattr(self.inner, "agent_settings", None) or {})

    def describe(self) -> dict[str, Any]:
        return {**self.inner.describe(), "versioned": True}

    async def generate(self, prompts: Sequence[list[int]], params: SamplingParams) -> list[Completion]:
        return await self.weights.turn(self.inner, prompts, params)


@dataclass
class Wave:
    """One optimizer step's worth of episodes: started on one version, trained at step `index`."""

    index: int
    version: int
    started: float = field(default_factory=time.monotonic)
    trajectories: list[Trajectory] | None = None
    error: BaseException | None = None


class EpisodeProducer:
    """The background producer; see the module docstring."""

    def __init__(
        self,
        episodes: EpisodeRunner[Policy],
        policy_for_wave: Callable[[int], Policy],
        admission: Admission,
        next_batch: Callable[[], list[Task]],
        finish: Callable[[Trajectory], None] = lambda t: None,
    ) -> None:
        self.episodes, self.policy_for_wave, self.admission = episodes, policy_for_wave, admission
        self._seeds: collections.deque[int] = collections.deque()
        self.next_batch, self.finish = next_batch, finish
        self.version = 0
        self.waves: dict[int, Wave] = {}
        self._done = threading.Condition()
        self._wake: asyncio.Event | None = None
        self._loop = background_loop()
        self._main: Future[None] | None = None
        self._running: set[asyncio.Task[None]] = set()
        self.blocked_seconds = 0.0  # producer time with no capacity (waiting on the trainer)

    # -- trainer side (any thread) -----------------------------------------------------------
    def start(self, seeds: Sequence[int]) -> None:
        """Start producing; `seeds` seed the first waves' sampling (k + 1 of them), one each."""
        self._seeds.extend(seeds)
        self._main = asyncio.run_coroutine_threadsafe(self._run(), self._loop)

    def set_version(self, version: int, seed: int) -> None:
        """The trainer finished optimizer step `version` (its weights are published): admit the next
        wave, which samples with `seed`."""
        self._loop.call_soon_threadsafe(self._advance, version, seed)

    def take(self, version: int, timeout: float) -> tuple[list[Trajectory], Wave]:
        """Step `version`'s trajectories (wave `version`), waiting up to `timeout` s for them."""
        deadline = time.monotonic() + timeout
        with self._done:
            while True:
                self._raise_if_dead()
                wave = self.waves.get(version)
                if wave is not None and wave.error is not None:
                    raise TrainingError(
                        f"the rollout producer failed in wave {version}: {wave.error!r}"
                    ) from wave.error
                if wave is not None and wave.trajectories is not None:
                    del self.waves[version]
                    return wave.trajectories, wave
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TrainingError(
                        f"no rollouts for step {version} within {timeout:.0f} s (producer stalled: "
                        f"waves in flight {sorted(self.waves)}); raise TrainConfig.async_timeout_s for slower episodes"
                    )
                self._done.wait(min(left, 1.0))

    def close(self, timeout: float = 30.0) -> None:
        """Stop admitting, cancel the waves in flight (their episodes release their kernels)."""
        if self._main is None:
            return
        asyncio.run_coroutine_threadsafe(self._stop(), self._loop).result(timeout)
        self._main = None

    # -- producer side (the background loop) -------------------------------------------------
    def _raise_if_dead(self) -> None:
        if self._main is not None and self._main.done():
            exc = self._main.exception() if not self._main.cancelled() else None
            raise TrainingError(f"the rollout producer stopped: {exc!r}") from exc

    def _advance(self, version: int, seed: int) -> None:
        self.version = version
        self._seeds.append(seed)
        if self._wake is not None:
            self._wake.set()

    async def _run(self) -> None:
        self._wake = asyncio.Event()
        groups = self.admission.groups_per_step
        while True:
            while self.admission.capacity(self.version) >= groups and self._seeds:
                tickets = [self.admission.admit(self.version) for _ in range(groups)]
                wave = Wave(tickets[0].index // groups, self.version)
                with self._done:
                    self.waves[wave.index] = wave
                policy = self.policy_for_wave(self._seeds.popleft())
                task = asyncio.create_task(self._wave(wave, self.next_batch(), policy))
                self._running.add(task)
                task.add_done_callback(self._running.discard)
            blocked = time.monotonic()
            await self._wake.wait()
            self.blocked_seconds += time.monotonic() - blocked
            self._wake.clear()

    async def _wave(self, wave: Wave, tasks: list[Task], policy: Policy) -> None:
        try:
            trajs = await self.episodes(tasks, policy)
            if len(trajs) != len(tasks):
                raise TrainingError(f"the episode runner returned {len(trajs)} trajectories for {len(tasks)} tasks")
            for t in trajs:
                t.lineage.setdefault("start_version", wave.version)
                self.finish(t)
            result: list[Trajectory] | None = trajs
            error: BaseException | None = None
        except Exception as exc:
            result, error = None, exc
        with self._done:
            wave.trajectories, wave.error = result, error
            self._done.notify_all()

    async def _stop(self) -> None:
        tasks = list(self._running)
        if self._main is not None:
            self._main.cancel()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


__all__ = ["EpisodeProducer", "VersionedPolicy", "VersionedWeights", "Wave"]

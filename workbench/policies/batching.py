"""Merge concurrent `generate` calls into one batch, run off the event loop.

Many episodes call `await policy.generate([ids], params)` at about the same time. A
`BatchingBackend` queues their rows, waits `batch_window_ms` for more to arrive, then runs
them all as one batch in a worker thread (`asyncio.to_thread`), so the event loop stays free
for kernels and tools. While a batch runs, new rows queue for the next one. Each event loop
gets its own queue; the backend's lock makes batches from different loops take turns.

Subclasses implement `_run_rows(rows) -> list[Completion]` (plain, blocking code).
"""

from __future__ import annotations

import abc
import asyncio
import threading
import weakref
from collections.abc import Sequence
from dataclasses import dataclass, field

from workbench.errors import PolicyError, WorkbenchError
from workbench.policies.base import Completion, SamplingParams
from workbench.policies.sampling import validate_params


@dataclass
class Row:
    """One prompt to complete. `seed` is the call's seed plus the prompt's index in the call,
    so identical prompts in one call still differ and the call as a whole is reproducible."""

    prompt: list[int]
    params: SamplingParams
    seed: int | None


@dataclass
class BatchStats:
    batches: int = 0
    rows: int = 0
    max_batch: int = 0

    def record(self, n: int) -> None:
        self.batches += 1
        self.rows += n
        self.max_batch = max(self.max_batch, n)


@dataclass
class _Lane:
    pending: list[tuple[Row, asyncio.Future]] = field(default_factory=list)
    task: asyncio.Task | None = None


def make_rows(prompts: Sequence[Sequence[int]], params: SamplingParams) -> list[Row]:
    validate_params(params)
    rows = []
    for i, p in enumerate(prompts):
        if isinstance(p, str) or not all(isinstance(t, int) for t in p):
            raise PolicyError(f"prompt {i} must be a list of token ids: encode text with policy.codec.encode(...) first")
        seed = None if params.seed is None else params.seed + i
        rows.append(Row(list(p), params, seed))
    return rows


class BatchingBackend(abc.ABC):
    """Base class: async `generate` with request merging, and `generate_sync` for notebooks."""

    def __init__(self, *, batch_window_ms: float = 5.0, max_batch_size: int = 32):
        if max_batch_size < 1:
            raise PolicyError(f"max_batch_size must be >= 1, got {max_batch_size}")
        self.batch_window_ms = batch_window_ms
        self.max_batch_size = max_batch_size
        self.stats = BatchStats()
        self._lock = threading.Lock()
        self._lanes: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

    @abc.abstractmethod
    def _run_rows(self, rows: list[Row]) -> list[Completion]:
        """Generate one completion per row (runs in a worker thread)."""

    def _check_row(self, row: Row) -> None:
        """Raise a clear error for a row that cannot run (e.g. a prompt that is too long)."""

    def _run_locked(self, rows: list[Row]) -> list[Completion]:
        with self._lock:
            self.stats.record(len(rows))
            return self._run_rows(rows)

    async def generate(self, prompts: Sequence[list[int]], params: SamplingParams) -> list[Completion]:
        rows = make_rows(prompts, params)
        for row in rows:
            self._check_row(row)
        if not rows:
            return []
        loop = asyncio.get_running_loop()
        lane = self._lanes.get(loop)
        if lane is None:
            lane = self._lanes[loop] = _Lane()
        futures = [loop.create_future() for _ in rows]
        lane.pending.extend(zip(rows, futures))
        if lane.task is None or lane.task.done():
            lane.task = loop.create_task(self._drain(lane))
        return list(await asyncio.gather(*futures))

    def generate_sync(self, prompts: Sequence[list[int]], params: SamplingParams) -> list[Completion]:
        """Blocking `generate` (one batch, no merging). Works inside Jupyter's running loop."""
        rows = make_rows(prompts, params)
        for row in rows:
            self._check_row(row)
        return self._run_locked(rows) if rows else []

    async def _drain(self, lane: _Lane) -> None:
        while lane.pending:
            if self.batch_window_ms > 0:
                await asyncio.sleep(self.batch_window_ms / 1000)
            batch = [(r, f) for r, f in lane.pending[: self.max_batch_size] if not f.done()]
            del lane.pending[: self.max_batch_size]
            if not batch:
                continue
            try:
                outs = await asyncio.to_thread(self._run_locked, [r for r, _ in batch])
            except BaseException as exc:  # noqa: BLE001 - every waiting caller must hear of it
                err = exc if isinstance(exc, WorkbenchError) else PolicyError(f"generation failed: {exc!r}")
                if err is not exc:
                    err.__cause__ = exc
                for _, f in batch:
                    if not f.done():
                        f.set_exception(err)
                if isinstance(exc, asyncio.CancelledError):
                    raise
                continue
            for (_, f), out in zip(batch, outs):
                if not f.done():
                    f.set_result(out)


__all__ = ["BatchStats", "BatchingBackend", "Row", "make_rows"]

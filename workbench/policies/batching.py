"""Merge concurrent `generate` calls into one batch, run off the event loop.

Many episodes call `await policy.generate([ids], params)` at about the same time. A
`BatchingBackend` queues their rows, waits `batch_window_ms` for more to arrive, then runs
them all as one batch in a worker thread (`asyncio.to_thread`), so the event loop stays free
for kernels and tools. While a batch runs, new rows queue for the next one. Each event loop
gets its own queue; the backend's lock makes batches from different loops take turns.

Subclasses implement `_run_rows(rows) -> list[Completion]` (plain, blocking code). Rows are
checked (`_check_row`) before they join a batch; if a batch still fails, its rows are run again
one by one, so only the row that fails gets the error and the calls merged with it do not.

A backend that decodes step by step can batch continuously instead (`streams = True` and
`_run_stream(feed)`): the worker takes rows that arrived since (`feed.take`) between steps and hands
each one back the step it finishes (`feed.finish`), so no caller waits for the slowest row of a
batch and a new call joins the batch already running.
"""

from __future__ import annotations

import abc
import asyncio
import threading
import weakref
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import ClassVar, Protocol

from workbench.errors import ConfigError, PolicyError, WorkbenchError
from workbench.policies.base import Completion, GenerateSync, SamplingParams
from workbench.policies.sampling import LogitControls, validate_params

_SEED_RANGE = (-(1 << 63), (1 << 64) - 1)  # what torch.Generator.manual_seed takes


@dataclass
class Row:
    """One prompt to complete. `seed` is the call's seed plus the prompt's index in the call,
    so identical prompts in one call still differ and the call as a whole is reproducible."""

    prompt: list[int]
    params: SamplingParams
    seed: int | None
    controls: LogitControls | None = None


@dataclass
class DetailedCompletion(Completion):
    """A `Completion` with, per generated token, the most likely tokens and their logprobs
    (`[{token_id: logprob, ...}, ...]`, from the distribution sampled, like `logprobs`);
    returned when `LogitControls.top_logprobs` > 0."""

    top_logprobs: list[dict[int, float]] | None = None


@dataclass
class BatchStats:
    batches: int = 0
    rows: int = 0
    max_batch: int = 0

    def record(self, n: int) -> None:
        self.batches += 1
        self.rows += n
        self.max_batch = max(self.max_batch, n)

    def admit(self, rows: int, running: int) -> None:
        """A continuous batch took `rows` more and now runs `running`."""
        self.rows += rows
        self.max_batch = max(self.max_batch, running)


class RowFeed(Protocol):
    """A continuous batch's link to its callers: rows to add, and where each finished row goes."""

    def take(self, room: int) -> list[tuple[int, Row]]:
        """Up to `room` rows that arrived since the last take, each with its key (empty: none)."""
        ...

    def admitted(self, rows: int, running: int) -> None:
        """The batch takes `rows` (from the last take) and runs `running` rows with them."""
        ...

    def finish(self, key: int, completion: Completion) -> None:
        """Row `key` is done: answer its caller now."""
        ...


@dataclass
class _Lane:
    pending: list[tuple[Row, asyncio.Future[Completion]]] = field(default_factory=list)
    task: asyncio.Task[None] | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)  # pending is shared with a streaming worker


class _LaneFeed:
    """A `RowFeed` over an event loop's queue of calls, used from the worker thread."""

    def __init__(self, lane: _Lane, loop: asyncio.AbstractEventLoop, stats: BatchStats) -> None:
        self.lane, self.loop, self.stats = lane, loop, stats
        self.active: dict[int, tuple[Row, asyncio.Future[Completion]]] = {}
        self._keys = 0

    def take(self, room: int) -> list[tuple[int, Row]]:
        with self.lane.lock:
            items = [(r, f) for r, f in self.lane.pending[:room] if not f.done()]
            del self.lane.pending[:room]
        taken = []
        for row, future in items:
            self._keys += 1
            self.active[self._keys] = (row, future)
            taken.append((self._keys, row))
        return taken

    def admitted(self, rows: int, running: int) -> None:
        self.stats.admit(rows, running)

    def finish(self, key: int, completion: Completion) -> None:
        _, future = self.active.pop(key)
        self.loop.call_soon_threadsafe(_deliver, [(None, future)], [completion])


class FixedFeed:
    """A `RowFeed` over a fixed list of rows (the blocking path and one-by-one retries)."""

    def __init__(self, rows: list[Row]) -> None:
        self.rows: list[Row] | None = rows
        self.results: list[Completion | None] = [None] * len(rows)

    def take(self, room: int) -> list[tuple[int, Row]]:
        rows, self.rows = self.rows or [], None
        return list(enumerate(rows))

    def admitted(self, rows: int, running: int) -> None:
        pass  # `_run_locked` counted the batch

    def finish(self, key: int, completion: Completion) -> None:
        self.results[key] = completion

    def completions(self) -> list[Completion]:
        assert all(c is not None for c in self.results), "a row never finished"
        return [c for c in self.results if c is not None]


def make_rows(
    prompts: Sequence[Sequence[int]], params: SamplingParams, controls: LogitControls | None = None
) -> list[Row]:
    validate_params(params)
    rows = []
    for i, p in enumerate(prompts):
        if isinstance(p, str) or not all(isinstance(t, int) for t in p):
            raise PolicyError(
                f"prompt {i} must be a list of token ids: encode text with policy.codec.encode(...) first"
            )
        seed = None if params.seed is None else params.seed + i
        if seed is not None and not _SEED_RANGE[0] <= seed <= _SEED_RANGE[1]:
            raise ConfigError(f"seed {params.seed} is out of range: use an integer between 0 and 2**63 - 1")
        rows.append(Row(list(p), params, seed, controls))
    return rows


class BatchingBackend(GenerateSync, abc.ABC):
    """Base class: async `generate` with request merging, and a blocking path for `policies.generate(policy, ...)`.

    `controls=LogitControls(...)` (logit bias, penalties, top logprobs) works on backends whose
    `supports_controls` is true; elsewhere it is refused, never ignored."""

    supports_controls: ClassVar[bool] = False
    streams: ClassVar[bool] = False  # True: `_run_stream` batches continuously (see the module docstring)

    def __init__(self, *, batch_window_ms: float = 5.0, max_batch_size: int = 32) -> None:
        if max_batch_size < 1:
            raise PolicyError(f"max_batch_size must be >= 1, got {max_batch_size}")
        self.batch_window_ms = batch_window_ms
        self.max_batch_size = max_batch_size
        self.stats = BatchStats()
        self._lock = threading.Lock()
        self._lanes: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Lane] = weakref.WeakKeyDictionary()
        self._cancels = 0  # bumped by cancel_running(); a batch compares it with its value at start
        self._batch_cancels = 0

    @abc.abstractmethod
    def _run_rows(self, rows: list[Row]) -> list[Completion]:
        """Generate one completion per row (runs in a worker thread)."""

    def _run_stream(self, feed: RowFeed) -> None:
        """Continuous batching (backends with `streams = True`): take rows from `feed` between decode
        steps, hand each to `feed.finish` the step it ends; return once none runs and none is left.
        This default runs what has arrived as one `_run_rows` batch, answers its rows, and takes
        again: fixed batches through the streaming path, for a backend with no steps to join."""
        while batch := feed.take(self.max_batch_size):
            feed.admitted(len(batch), len(batch))
            outs = self._run_rows([row for _, row in batch])
            for (key, _), completion in zip(batch, outs, strict=True):
                feed.finish(key, completion)

    def _check_row(self, row: Row) -> None:
        """Raise a clear error for a row that cannot run (e.g. a prompt that is too long)."""

    def validate(
        self, prompts: Sequence[Sequence[int]], params: SamplingParams, controls: LogitControls | None = None
    ) -> list[Row]:
        """The rows `generate` would run, or the error it would raise for this input (ConfigError
        or PolicyError), without generating anything."""
        if controls is not None and not self.supports_controls:
            raise ConfigError(f"{type(self).__name__} does not support logit bias, penalties or top logprobs")
        rows = make_rows(prompts, params, controls)
        for row in rows:
            self._check_row(row)
        return rows

    def _run_locked(self, rows: list[Row]) -> list[Completion]:
        with self._lock:
            self._batch_cancels = self._cancels
            self.stats.record(len(rows))
            return self._run_rows(rows)

    def _stream_locked(self, feed: RowFeed) -> None:
        with self._lock:
            self._batch_cancels = self._cancels
            self.stats.batches += 1
            self._run_stream(feed)

    def cancel_running(self) -> None:
        """End the batch running now (its callers get PolicyError); later batches run normally.
        A server calls this when it stops, so a long generation never holds up the exit.
        Backends that generate token by token check `_cancelled()` at each step."""
        self._cancels += 1

    def _cancelled(self) -> bool:
        return self._cancels != self._batch_cancels

    async def generate(
        self, prompts: Sequence[list[int]], params: SamplingParams, *, controls: LogitControls | None = None
    ) -> list[Completion]:
        rows = self.validate(prompts, params, controls)
        if not rows:
            return []
        loop = asyncio.get_running_loop()
        lane = self._lanes.get(loop)
        if lane is None:
            lane = self._lanes[loop] = _Lane()
        futures = [loop.create_future() for _ in rows]
        with lane.lock:
            lane.pending.extend(zip(rows, futures, strict=True))
        if lane.task is None or lane.task.done():
            lane.task = loop.create_task(self._drain(lane))
        return list(await asyncio.gather(*futures))

    def _generate_blocking(
        self, prompts: Sequence[list[int]], params: SamplingParams, *, controls: LogitControls | None = None
    ) -> list[Completion]:
        """Blocking `generate` (one batch, no merging). Works inside Jupyter's running loop."""
        rows = self.validate(prompts, params, controls)
        return self._run_locked(rows) if rows else []

    async def _drain(self, lane: _Lane) -> None:
        while lane.pending:
            if self.batch_window_ms > 0:
                await asyncio.sleep(self.batch_window_ms / 1000)
            if self.streams:
                await self._stream(lane)
                continue
            with lane.lock:
                batch = [(r, f) for r, f in lane.pending[: self.max_batch_size] if not f.done()]
                del lane.pending[: self.max_batch_size]
            if not batch:
                continue
            try:
                outs = await asyncio.to_thread(self._run_locked, [r for r, _ in batch])
            except Exception as exc:
                if len(batch) == 1:
                    _fail(batch, exc)
                else:  # a bad row must not fail the rows merged with it
                    await self._one_by_one(batch)
                continue
            except BaseException as exc:  # cancelled, or SystemExit from the worker thread
                _fail(batch, exc)
                if isinstance(exc, asyncio.CancelledError):
                    raise
                continue
            _deliver(batch, outs)

    async def _stream(self, lane: _Lane) -> None:
        """One continuous batch; if it fails, the rows still in it run again one by one."""
        feed = _LaneFeed(lane, asyncio.get_running_loop(), self.stats)
        try:
            await asyncio.to_thread(self._stream_locked, feed)
        except Exception as exc:
            rows = list(feed.active.values())
            if len(rows) == 1:
                _fail(rows, exc)
            else:  # a bad row must not fail the rows it ran with
                await self._one_by_one(rows)
        except BaseException as exc:  # cancelled, or SystemExit from the worker thread
            _fail(list(feed.active.values()), exc)
            if isinstance(exc, asyncio.CancelledError):
                raise

    async def _one_by_one(self, batch: list[tuple[Row, asyncio.Future[Completion]]]) -> None:
        for item in batch:
            try:
                outs = await asyncio.to_thread(self._run_locked, [item[0]])
            except Exception as exc:
                _fail([item], exc)
            except BaseException as exc:
                _fail(batch, exc)  # the rest of the batch would never run: tell every caller
                raise
            else:
                _deliver([item], outs)


def _deliver(batch: Sequence[tuple[Row | None, asyncio.Future[Completion]]], outs: list[Completion]) -> None:
    for (_, f), out in zip(batch, outs, strict=True):
        if not f.done():
            f.set_result(out)


def _fail(batch: Sequence[tuple[Row, asyncio.Future[Completion]]], exc: BaseException) -> None:
    err = exc if isinstance(exc, WorkbenchError) else PolicyError(f"generation failed: {exc!r}")
    if err is not exc:
        err.__cause__ = exc
    for _, f in batch:
        if not f.done():
            f.set_exception(err)


__all__ = ["BatchStats", "BatchingBackend", "DetailedCompletion", "FixedFeed", "Row", "RowFeed", "make_rows"]

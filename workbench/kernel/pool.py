"""`AsyncKernelPool`: pre-warmed sandboxed kernels, one fresh kernel per rollout.

    async with AsyncKernelPool(4, max_concurrency=8, startup_code="import workbench.runtime") as pool:
        async with pool.acquire() as kernel:       # a warm kernel, yours alone
            obs = await kernel.execute("1 + 1")
        # on exit the kernel is discarded; a replacement was already warming

Kernels fork from their profile's zygote (`start="zygote"`, the default where the machine supports
it: see `workbench.kernel.zygote`) or start as fresh processes (`start="exec"`).

`size` kernels are kept warm. Handing one out starts its replacement at once, so up to
`size + max_concurrency` kernels may be alive. At most `max_concurrency` (default: `size`) are
handed out at a time; further `acquire()`s wait in a queue of at most `max_queue`, beyond which
`acquire()` raises `PoolError` (backpressure). A warm kernel that dies is replaced at once; one that
fails to start is retried `start_retries` times, then waiters get a `PoolError`. Nothing polls:
waiting is on asyncio queues, semaphores and pidfds. `KernelPool` is the sync twin.
"""

from __future__ import annotations

import asyncio
import contextlib
import warnings
from collections.abc import AsyncIterator, Iterator
from typing import Any

from workbench.errors import PoolError
from workbench.kernel.async_kernel import AsyncKernel, StartMethod, start_method
from workbench.kernel.sync import Kernel, run_sync


class AsyncKernelPool:
    """An async pool of warm sandboxed kernels. Kernel keywords go to each `AsyncKernel`."""

    def __init__(
        self,
        size: int = 4,
        *,
        max_concurrency: int | None = None,
        max_queue: int = 1024,
        start_retries: int = 3,
        retry_delay: float = 0.5,
        start: StartMethod | None = None,
        **kernel_options: Any,
    ) -> None:
        if size < 1:
            raise PoolError(f"pool size must be >= 1, got {size}")
        self.start_method = start_method(start, kernel_options.get("isolation", "bwrap"))
        self.size = size
        self.max_concurrency = max_concurrency or size
        self.max_queue = max_queue
        self.start_retries = start_retries
        self.retry_delay = retry_delay
        self.kernel_options = {**kernel_options, "start": self.start_method}
        self._ready: asyncio.Queue[AsyncKernel | PoolError] | None = None
        self._slots: asyncio.Semaphore | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        self._in_use: set[AsyncKernel] = set()
        self._warm_set: set[AsyncKernel] = set()  # warm kernels still in the queue
        self._none_in_use = asyncio.Event()
        self._none_in_use.set()
        self._starting = 0
        self._waiting = 0
        self._closed = False
        self.started = 0  # kernels started, over the pool's life
        self.failed_starts = 0

    @property
    def warm(self) -> int:
        """Live kernels waiting to be handed out."""
        return len(self._warm_set)

    @property
    def in_use(self) -> int:
        return len(self._in_use)

    async def start(self) -> AsyncKernelPool:
        """Warm `size` kernels; raises `PoolError` if they cannot be started."""
        self._ready = asyncio.Queue()
        self._slots = asyncio.Semaphore(self.max_concurrency)
        await asyncio.gather(*(self._spawn() for _ in range(self.size)))
        warmed = [self._ready.get_nowait() for _ in range(self._ready.qsize())]  # look, then put back in order
        for item in warmed:
            self._ready.put_nowait(item)
        errors = [k for k in warmed if isinstance(k, PoolError)]
        if errors:
            await self.close()
            raise errors[0]
        return self

    def _spawn(self) -> asyncio.Task[None]:
        task = asyncio.create_task(self._warm_one())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def _warm_one(self) -> None:
        assert self._ready is not None
        self._starting += 1
        last: BaseException | None = None
        try:
            for attempt in range(self.start_retries + 1):
                if self._closed:
                    return
                kernel = AsyncKernel(**self.kernel_options)
                try:
                    await kernel.start()
                except Exception as exc:
                    last = exc
                    self.failed_starts += 1
                    await asyncio.sleep(self.retry_delay * 2**attempt)
                    continue
                self.started += 1
                if self._closed:
                    await kernel.close()
                else:
                    self._warm_set.add(kernel)

                    def on_death(_: asyncio.Future[int], k: AsyncKernel = kernel) -> None:
                        self._on_death(k)

                    kernel.died.add_done_callback(on_death)
                    self._ready.put_nowait(kernel)
                return
            self._ready.put_nowait(
                PoolError(
                    f"a sandboxed kernel failed to start {self.start_retries + 1} times; last error: "
                    f"{last}. Check `workbench kernels demo` and the sandbox profile"
                )
            )
        finally:
            self._starting -= 1

    async def wait_warm(self) -> None:
        """Wait until all `size` kernels are warm (e.g. before timing an acquire)."""
        while self.warm < self.size and not self._closed:
            await asyncio.gather(*list(self._tasks))
            if self.warm < self.size and not self._tasks:
                self._spawn()

    async def _take(self) -> AsyncKernel:
        assert self._ready is not None
        while True:
            if self._closed:
                raise PoolError("the kernel pool is closed")
            if self._ready.empty() and self._starting == 0:
                self._spawn()  # self-heal after failures or deaths
            item = await self._ready.get()
            if self._closed:
                raise PoolError("the kernel pool is closed")
            if isinstance(item, PoolError):
                raise item
            self._warm_set.discard(item)
            if item.alive:
                self._spawn()  # the replacement warms while this one is used
                return item
            self._discard(item)  # died while warm: its replacement is already warming

    def _on_death(self, kernel: AsyncKernel) -> None:
        """A warm kernel died (OOM, killed): start its replacement now, not at the next acquire."""
        if kernel in self._warm_set and not self._closed:
            self._warm_set.discard(kernel)
            self._spawn()

    def _discard(self, kernel: AsyncKernel) -> None:
        task = asyncio.create_task(kernel.close())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    @contextlib.asynccontextmanager
    async def acquire(self, timeout: float | None = None) -> AsyncIterator[AsyncKernel]:
        """A fresh warm kernel for one rollout; discarded (closed) when the block ends."""
        if self._ready is None or self._slots is None:
            raise PoolError("the kernel pool is not started; `await pool.start()` first")
        if self._closed:
            raise PoolError("the kernel pool is closed")
        if self._waiting >= self.max_queue:
            raise PoolError(
                f"the kernel pool queue is full ({self.max_queue} waiting); "
                "submit fewer rollouts at once or raise max_queue"
            )
        self._waiting += 1
        try:
            async with asyncio.timeout(timeout):
                await self._slots.acquire()
                try:
                    kernel = await self._take()
                except BaseException:
                    self._slots.release()
                    raise
        except TimeoutError:
            raise PoolError(
                f"no kernel became free within {timeout} s; raise the timeout, the pool size or max_concurrency"
            ) from None
        finally:
            self._waiting -= 1
        self._in_use.add(kernel)
        self._none_in_use.clear()
        try:
            yield kernel
        finally:
            self._in_use.discard(kernel)
            if not self._in_use:
                self._none_in_use.set()
            self._slots.release()
            self._discard(kernel)

    async def close(self, grace: float = 5.0) -> None:
        """Stop warming, wait up to `grace` s for kernels in use, then close every kernel."""
        if self._closed:
            return
        self._closed = True
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._none_in_use.wait(), grace)
        closing = [k.close() for k in list(self._in_use)]
        if self._ready is not None:
            while not self._ready.empty():
                item = self._ready.get_nowait()
                if isinstance(item, AsyncKernel):
                    closing.append(item.close())
            for _ in range(self._waiting):  # wake waiters so they see the pool closed
                self._ready.put_nowait(PoolError("the kernel pool is closed"))
                if self._slots is not None:
                    self._slots.release()
        await asyncio.gather(*closing, return_exceptions=True)
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)
        if self._ready is not None:  # kernels that finished warming while we closed
            while not self._ready.empty():
                item = self._ready.get_nowait()
                if isinstance(item, AsyncKernel):
                    await item.close()

    async def __aenter__(self) -> AsyncKernelPool:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


class KernelPool:
    """The sync twin of `AsyncKernelPool` (runs on the shared background loop).

    with KernelPool(2) as pool:
        with pool.acquire() as kernel:              # a sync `Kernel`
            print(kernel.execute("6 * 7").text)     # 42
    """

    def __init__(self, size: int = 4, **options: Any) -> None:
        self.aio = AsyncKernelPool(size, **options)

    def start(self) -> KernelPool:
        run_sync(self.aio.start())
        return self

    @contextlib.contextmanager
    def acquire(self, timeout: float | None = None) -> Iterator[Kernel]:
        cm = self.aio.acquire(timeout)
        kernel = run_sync(cm.__aenter__())
        try:
            yield Kernel._wrap(kernel)
        finally:
            run_sync(cm.__aexit__(None, None, None))

    def close(self) -> None:
        run_sync(self.aio.close())

    def __enter__(self) -> KernelPool:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # `KernelPool` was the async pool before the naming rule (README, Architecture): old async code fails
    # here with the fix, instead of deep inside asyncio.
    def __await__(self) -> Any:
        raise TypeError(_ASYNC_RENAMED)

    async def __aenter__(self) -> None:
        raise TypeError(_ASYNC_RENAMED)

    async def __aexit__(self, *exc: object) -> None:
        return None


_ASYNC_RENAMED = (
    "KernelPool is the blocking pool (use `with KernelPool(...)`); the async pool is AsyncKernelPool "
    "(`async with AsyncKernelPool(...)`), which was called KernelPool before"
)


class BlockingKernelPool(KernelPool):
    """The old name of `KernelPool` (a `DeprecationWarning` when built)."""

    def __init__(self, size: int = 4, **options: Any) -> None:
        warnings.warn("BlockingKernelPool is now KernelPool", DeprecationWarning, stacklevel=2)
        super().__init__(size, **options)

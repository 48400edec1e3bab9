"""The warm pool: fresh kernel per rollout, replacement, backpressure, failures, clean shutdown."""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path

import pytest

from workbench.errors import PoolError
from workbench.kernel import AsyncKernel, AsyncKernelPool, KernelPool
from workbench.kernel.procs import process_tree


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_20_rollouts_through_4_leak_nothing(tmp_path: Path):
    async def main() -> None:
        async with AsyncKernel(root=tmp_path):  # creates the process-wide zmq context first
            pass
        fds_before = _fds()
        seen_pids: set[int] = set()
        dirs: list[Path] = []
        async with AsyncKernelPool(4, root=tmp_path) as pool:
            assert pool.warm == 4

            async def rollout(i: int) -> None:
                async with pool.acquire() as k:
                    seen_pids.update(process_tree(k.pid))
                    dirs.append(k.kernel_dir)
                    fresh = await k.execute("'marker' in globals()")
                    assert fresh.result == "False"  # never reused across rollouts
                    await k.execute(f"marker = {i}")
                    assert (await k.execute("marker * 2")).result == str(i * 2)

            await asyncio.gather(*(rollout(i) for i in range(20)))
            assert pool.in_use == 0
        assert len(dirs) == 20 and len(set(dirs)) == 20
        assert not [p for p in seen_pids if _alive(p)]
        assert not list(tmp_path.iterdir())  # every rollout dir removed
        assert _fds() <= fds_before  # sockets, pidfds, logs and uid leases all closed

    asyncio.run(main())


def test_backpressure_and_acquire_timeout(tmp_path: Path):
    async def main() -> None:
        async with AsyncKernelPool(1, max_concurrency=1, max_queue=1, root=tmp_path) as pool:
            async with pool.acquire():
                waiter = asyncio.create_task(_hold(pool))
                await asyncio.sleep(0.05)  # the waiter now fills the queue
                with pytest.raises(PoolError, match="queue is full"):
                    async with pool.acquire():
                        pass
                waiter.cancel()
                await asyncio.gather(waiter, return_exceptions=True)
                with pytest.raises(PoolError, match="no kernel became free"):
                    async with pool.acquire(timeout=0.2):
                        pass

    asyncio.run(main())


async def _hold(pool: AsyncKernelPool) -> None:
    async with pool.acquire():
        await asyncio.sleep(60)


def test_dead_warm_kernel_is_replaced(tmp_path: Path):
    async def main() -> None:
        async with AsyncKernelPool(1, root=tmp_path) as pool:
            warm: AsyncKernel = pool._ready._queue[0]  # type: ignore[union-attr]
            started = pool.started
            os.kill(warm.pid, signal.SIGKILL)
            await asyncio.wait_for(asyncio.shield(warm.died), 5)
            await pool.wait_warm()  # the replacement started on the death, not on demand
            assert pool.started == started + 1
            async with pool.acquire() as k:
                assert k is not warm and k.alive
                assert (await k.execute("1 + 1")).result == "2"

    asyncio.run(main())


def test_start_failures_retried_then_pool_error(tmp_path: Path):
    async def main() -> None:
        pool = AsyncKernelPool(
            1, start_retries=1, retry_delay=0.0, root=tmp_path, startup_code="raise RuntimeError('boom at start-up')"
        )
        with pytest.raises(PoolError, match=r"(?s)failed to start 2 times.*boom at start-up"):
            await pool.start()
        assert pool.failed_starts == 2 and not list(tmp_path.iterdir())

    asyncio.run(main())


def test_close_stops_everything_and_wakes_waiters(tmp_path: Path):
    async def main() -> None:
        pool = await AsyncKernelPool(2, max_concurrency=1, root=tmp_path).start()
        cm = pool.acquire()
        k = await cm.__aenter__()
        waiter = asyncio.create_task(_hold(pool))
        await asyncio.sleep(0.05)
        pids = process_tree(k.pid) + [
            p
            for w in list(pool._ready._queue)  # type: ignore[union-attr]
            for p in process_tree(w.pid)
        ]
        await pool.close(grace=0.1)
        with pytest.raises(PoolError, match="closed"):
            await waiter
        assert not k.alive and not [p for p in pids if _alive(p)]
        with pytest.raises(PoolError, match="closed"):
            async with pool.acquire():
                pass

    asyncio.run(main())


def test_blocking_pool(tmp_path: Path):
    with KernelPool(1, root=tmp_path, startup_code="import math") as pool:
        with pool.acquire() as k:
            assert k.execute("math.factorial(5)").result == "120"
        with pool.acquire() as k2:
            assert k2.execute("'math' in globals()").result == "True"  # startup ran, fresh kernel


def test_old_async_use_of_the_blocking_pool_names_the_fix():
    """KernelPool was the async pool before the naming rule; awaiting the blocking one says what to use."""
    pool = KernelPool(1)  # nothing starts until start()/with

    async def old_style():
        async with pool:
            pass

    with pytest.raises(TypeError, match="AsyncKernelPool"):
        asyncio.run(old_style())
    with pytest.raises(TypeError, match="AsyncKernelPool"):
        pool.__await__()
    import workbench.kernel as kernel_package

    with pytest.warns(DeprecationWarning, match="now KernelPool"):
        assert isinstance(kernel_package.BlockingKernelPool(1), KernelPool)

"""`Kernel`: the blocking twin of `AsyncKernel`, for notebooks and scripts.

    from workbench.kernel import Kernel

    with Kernel(profile="default", output_cap=4000) as k:
        obs = k.execute("sum(range(10))", timeout=10)
        print(obs.text)                                  # 45

Every sync kernel runs its async core on one shared background event loop thread. That
thread lives as long as the process, which matters: bubblewrap's --die-with-parent signal is
tied to the thread that spawned it.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Coroutine
from pathlib import Path
from typing import Any, TypeVar

from workbench.kernel.async_kernel import AsyncKernel
from workbench.kernel.fork import ForkResult
from workbench.kernel.observation import Observation
from workbench.sandbox import SandboxProfile

T = TypeVar("T")
_loop: asyncio.AbstractEventLoop | None = None
_loop_lock = threading.Lock()


def background_loop() -> asyncio.AbstractEventLoop:
    """The process-wide event loop thread the sync wrappers use (started on first use)."""
    global _loop
    with _loop_lock:
        if _loop is None:
            _loop = asyncio.new_event_loop()
            threading.Thread(target=_loop.run_forever, name="workbench-kernels", daemon=True).start()
    return _loop


def run_sync(coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
    """Run a coroutine on the background loop and wait for its result."""
    return asyncio.run_coroutine_threadsafe(coro, background_loop()).result(timeout)


class Kernel:
    """A sandboxed kernel with blocking methods. Same keywords as `AsyncKernel`."""

    def __init__(self, profile: str | os.PathLike[str] | SandboxProfile = "default", **options: Any) -> None:
        self._k = AsyncKernel(profile, **options)

    @classmethod
    def _wrap(cls, kernel: AsyncKernel) -> Kernel:
        obj = cls.__new__(cls)
        obj._k = kernel
        return obj

    @property
    def aio(self) -> AsyncKernel:
        """The async kernel underneath."""
        return self._k

    def start(self) -> Kernel:
        run_sync(self._k.start())
        return self

    def execute(self, code: str, timeout: float | None = None) -> Observation:
        """Run code; Ctrl-C while waiting interrupts the kernel too."""
        fut = asyncio.run_coroutine_threadsafe(self._k.execute(code, timeout), background_loop())
        try:
            return fut.result()
        except KeyboardInterrupt:
            self.interrupt()
            raise

    def interrupt(self) -> None:
        run_sync(self._k.interrupt())

    def fork(self, n: int, *, strict: bool = False, timeout: float = 120.0) -> ForkResult[Kernel]:
        """`n` new kernels holding copies of this one's state (see `AsyncKernel.fork`)."""
        forked = run_sync(self._k.fork(n, strict=strict, timeout=timeout))
        return ForkResult([Kernel._wrap(k) for k in forked], forked.skipped, forked.snapshot_bytes)

    def close(self) -> None:
        run_sync(self._k.close())

    def share(self, path: str | os.PathLike[str]) -> None:
        self._k.share(path)

    @property
    def kernel_dir(self) -> Path:
        """The kernel's private directory on the host (run/, work/, outputs/, kernel.log)."""
        return self._k.kernel_dir

    @property
    def rollout_dir(self) -> Path:
        """Deprecated name of `kernel_dir`."""
        return self._k.kernel_dir

    @property
    def alive(self) -> bool:
        return self._k.alive

    @property
    def pid(self) -> int | None:
        return self._k.pid

    @property
    def uid(self) -> int | None:
        return self._k.uid

    def __enter__(self) -> Kernel:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "alive" if self.alive else "stopped"
        return f"<Kernel {self._k.profile.name} {state} pid={self.pid}>"

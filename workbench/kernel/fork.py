"""`await kernel.fork(n)`: n fresh kernels holding a copy of this one's state.

    async with AsyncKernel() as k:
        await k.execute("import numpy as np; x = np.arange(10**7); open('a.txt', 'w').write('hi')")
        children = await k.fork(4)       # ForkResult: a sequence of 4 started AsyncKernels
        children.skipped                 # {name: type} of what could not be copied (open files, ...)
        await children[0].execute("x[0] = -1")   # private to that child
        for child in children:
            await child.close()

A fork here is a **state copy into fresh kernels**, not an `os.fork` of the running kernel: that
process has threads, a zmq context and no privilege left to give a copy new namespaces. So:

1. the parent kernel writes its user namespace (cloudpickle, protocol 5; large buffers out-of-band,
   page-aligned) and a tar of its /workspace into a file the host made in its run dir (a silent
   cell running `workbench.runtime.fork.save`; the file is capped by `limits.file_size_mb`, the tar
   by the children's /workspace size);
2. the host copies that file out of the parent's reach (so the parent cannot change it later; the
   copy sits in the kernels' root dir, so it may outlive the parent) and reads only its JSON
   footer: it never unpickles kernel bytes;
3. each child is an ordinary kernel of the parent's settings and start method (zygote or exec: same
   isolation, own uid, cgroup and /workspace); the host hard-links the copy into its run dir, the
   child maps it copy-on-write (`workbench.runtime.fork.load`) and the host unlinks it again.

Siblings share the snapshot's pages until one writes (numpy arrays are rebuilt on them); nothing a
child writes reaches the file, the parent or a sibling. What is not copied: names whose values do
not pickle (reported in `ForkResult.skipped` and each child's `_fork_skipped`), the output history
(`In`, `Out`, `_1`), running threads and open resources, and the objects `install` made (each child
keeps its own notepad, given the parent's contents, and its own tool stubs).
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import secrets
import shutil
from collections.abc import Awaitable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar, overload

from workbench.errors import KernelError
from workbench.safetext import safe_text
from workbench.sandbox.bwrap import INSIDE_RUN, INSIDE_WORK

if TYPE_CHECKING:
    from workbench.kernel.async_kernel import AsyncKernel

_log = logging.getLogger(__name__)
_RUNTIME = "__import__('workbench.runtime.fork', fromlist=['fork'])"
_MAX_FOOTER = 1 << 20


K = TypeVar("K")


@dataclass
class ForkResult(Sequence[K]):
    """The forked kernels (`AsyncKernel`s, or `Kernel`s from `Kernel.fork`) as a sequence, what
    could not be copied, and the snapshot's size."""

    kernels: list[K]
    skipped: dict[str, str] = field(default_factory=dict)  # name -> type of each value not copied
    snapshot_bytes: int = 0

    @overload
    def __getitem__(self, i: int) -> K: ...
    @overload
    def __getitem__(self, i: slice) -> Sequence[K]: ...
    def __getitem__(self, i: int | slice) -> K | Sequence[K]:
        return self.kernels[i]

    def __len__(self) -> int:
        return len(self.kernels)

    def __iter__(self) -> Iterator[K]:
        return iter(self.kernels)


@dataclass
class Snapshot:
    """A parent kernel's state on the host: a file only the host can write, and its footer."""

    path: Path
    skipped: dict[str, str]
    size: int

    async def restore(self, kernel: AsyncKernel, timeout: float = 120.0) -> None:
        """Load this state into a started `kernel` (its namespace and /workspace)."""
        link = kernel.kernel_dir / "run" / f"fork-{secrets.token_hex(8)}.snap"
        try:
            os.link(self.path, link)
        except OSError:
            await asyncio.to_thread(shutil.copyfile, self.path, link)  # another filesystem
        try:
            args = f"{_inside(kernel, link)!r}, {_workspace(kernel)!r}"
            obs = await kernel.execute(f"{_RUNTIME}.load({args})", timeout=timeout, silent=True)
        finally:
            link.unlink(missing_ok=True)
        if not obs.ok:
            raise KernelError(f"the forked kernel could not load the parent's state: {obs.error_value or obs.text}")

    def discard(self) -> None:
        self.path.unlink(missing_ok=True)


def _inside(kernel: AsyncKernel, host_path: Path) -> str:
    """`host_path` (in the kernel's run dir) as the kernel sees it."""
    return f"{INSIDE_RUN}/{host_path.name}" if kernel.isolation == "bwrap" else str(host_path)


def _workspace(kernel: AsyncKernel) -> str:
    return INSIDE_WORK if kernel.isolation == "bwrap" else str(kernel.kernel_dir / "work")


async def snapshot(kernel: AsyncKernel, timeout: float = 120.0) -> Snapshot:
    """Write `kernel`'s state (see the module doc, steps 1-2); `discard()` it when done."""
    token = secrets.token_hex(8)
    written = kernel.kernel_dir / "run" / f"fork-{token}.snap"
    fd = os.open(written, os.O_CREAT | os.O_EXCL | os.O_WRONLY | os.O_CLOEXEC, 0o600)
    os.close(fd)
    kept = kernel.root / f"fork-{token}.snap"  # outside the kernel's reach, and outliving it
    try:
        if kernel.uid is not None:
            os.chown(written, kernel.uid, kernel.uid)
        cap = kernel.profile.workspace_size_mb << 20
        args = f"{_inside(kernel, written)!r}, {_workspace(kernel)!r}, {cap}"
        obs = await kernel.execute(f"{_RUNTIME}.save({args})", timeout=timeout, silent=True)
        if not obs.ok:
            raise KernelError(f"the kernel could not save its state for fork: {obs.error_value or obs.text}")
        await asyncio.to_thread(shutil.copyfile, written, kept)
    finally:
        written.unlink(missing_ok=True)
    try:
        os.chmod(kept, 0o644)  # root's file: the children (other uids) read it, none can write it
        return Snapshot(kept, _read_skipped(kept), kept.stat().st_size)
    except BaseException:
        kept.unlink(missing_ok=True)
        raise


def _read_skipped(path: Path) -> dict[str, str]:
    """The footer's {name: type} of values not copied (JSON written by the kernel: checked)."""
    with open(path, "rb") as f:
        f.seek(0, os.SEEK_END)
        size = f.tell()
        f.seek(max(0, size - 16))
        tail = f.read(16)
        length = int.from_bytes(tail[:8], "little")
        if tail[8:] != b"WBFORK01" or not 0 < length <= min(_MAX_FOOTER, size - 16):
            raise KernelError("the kernel wrote no valid fork snapshot (bad footer)")
        f.seek(size - 16 - length)
        try:
            footer = json.loads(f.read(length))
        except ValueError:
            footer = None
    skipped = footer.get("skipped") if isinstance(footer, dict) else None
    if not isinstance(skipped, dict):
        raise KernelError("the kernel wrote no valid fork snapshot (bad footer)")
    return {safe_text(str(k)): safe_text(str(v)) for k, v in skipped.items()}


async def fork(kernel: AsyncKernel, n: int, *, strict: bool = False, timeout: float = 120.0) -> ForkResult[AsyncKernel]:
    """`n` started kernels holding copies of `kernel`'s state (see the module doc)."""
    if n < 1:
        raise KernelError(f"fork(n) needs n >= 1, got {n}")
    children: ForkResult[AsyncKernel] = ForkResult([kernel.sibling() for _ in range(n)])
    saving = asyncio.ensure_future(snapshot(kernel, timeout))
    try:
        await _all([saving, *(child.start() for child in children)])  # the children start while it saves
        state = saving.result()
        children.skipped, children.snapshot_bytes = state.skipped, state.size
        if state.skipped:
            message = f"fork: not copied (their values do not pickle): {state.skipped}"
            if strict:
                raise KernelError(message + "; delete or rebuild them before forking, or pass strict=False")
            _log.warning(message)
        await _all(state.restore(child, timeout) for child in children)
    except BaseException:
        await asyncio.gather(*(child.close() for child in children), return_exceptions=True)
        raise
    finally:
        if saving.done() and not saving.cancelled() and saving.exception() is None:
            saving.result().discard()
        else:
            saving.cancel()
    return children


async def _all(aws: Iterable[Awaitable[object]]) -> None:
    """Await all; the first failure is raised once every one has finished."""
    results = await asyncio.gather(*aws, return_exceptions=True)
    for result in results:
        if isinstance(result, BaseException):
            raise result


__all__ = ["ForkResult", "Snapshot", "fork", "snapshot"]

"""Which kernel processes this test process still has: every path that ends a run must leave none.

An exec'd kernel is a `bwrap` child of this process; a zygote kernel's outer process is a child of one
of this process's zygotes (`workbench.kernel.zygote.zygote_pids`: the forking processes inside their
bwrap). A zygote itself is not a kernel: it lives, kernel-less, as long as this process, to fork the
next ones."""

from __future__ import annotations

import os
from pathlib import Path

ZYGOTE = b"workbench.kernel.zygote_main"


def _table() -> dict[int, tuple[int, bytes]]:
    """pid -> (parent pid, command line) of every process that can be read now."""
    procs = {}
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            status = (proc / "status").read_text()
            cmdline = (proc / "cmdline").read_bytes()
        except OSError:
            continue
        ppid = int(status.split("PPid:\t", 1)[1].split("\n", 1)[0])
        procs[int(proc.name)] = (ppid, cmdline)
    return procs


def kernels_left() -> list[int]:
    """Pids of the kernels this process started that are still running (their outermost processes)."""
    from workbench.kernel.zygote import zygote_pids

    zygotes, me = set(zygote_pids()), os.getpid()
    return [
        pid
        for pid, (ppid, cmdline) in _table().items()
        if ppid in zygotes or (ppid == me and b"bwrap" in cmdline and ZYGOTE not in cmdline)
    ]

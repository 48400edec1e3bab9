"""Kernels never outlive the worker that started them.

    stop = start_watchdog(root)     # in the worker: `root` holds every rollout dir it creates

A small process (`python -m workbench.cluster.watchdog ROOT`, detached: its parent is not the
worker, so Ray's clean-up of a dead worker's children does not take it first) holds the read end
of a pipe whose write end only the worker has. When the worker ends for any reason (`ray.kill`, SIGKILL, OOM, a
clean exit) the pipe closes; the watchdog then kills every process whose command line names ROOT
(each sandbox's outermost process: bwrap, or the kernel itself without isolation) with everything
under it, and removes ROOT. Nothing polls: it blocks on one read. bwrap's `--die-with-parent` does
the same for sandboxed kernels; this also covers `isolation="none"` and the rollout dirs.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

from workbench.kernel.procs import process_tree


def start_watchdog(root: Path) -> int:
    """Start the watchdog for `root`; returns the pipe's write fd (close it to reap at once)."""
    read_fd, write_fd = os.pipe()  # both non-inheritable; the child gets read_fd as its stdin
    launcher = subprocess.Popen(
        [sys.executable, "-m", "workbench.cluster.watchdog", str(root)],
        stdin=read_fd,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
        close_fds=True,
    )
    os.close(read_fd)
    launcher.wait()  # it forks the watchdog and exits at once
    return write_fd


def processes_naming(root: str) -> list[int]:
    """Pids whose command line names a path under `root` (not this process)."""
    needle, me, found = (root.rstrip("/") + "/").encode(), os.getpid(), []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == me:
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                if needle in f.read():
                    found.append(int(entry))
        except OSError:
            continue
    return found


def reap(root: str) -> int:
    """Kill every sandbox under `root` and what it started; remove `root`. Returns how many died."""
    victims = {pid for top in processes_naming(root) for pid in process_tree(top)}
    for pid in victims:
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    shutil.rmtree(root, ignore_errors=True)
    return len(victims)


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m workbench.cluster.watchdog ROOT  (stdin: the worker's pipe)", file=sys.stderr)
        return 2
    if os.fork() > 0:  # detach: the watchdog is re-parented, no longer the worker's child
        os._exit(0)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # only the pipe's end stops it
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    while os.read(0, 4096):
        pass
    reap(argv[0])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

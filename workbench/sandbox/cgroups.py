"""Per-sandbox cgroups (when workbench runs as root and a writable hierarchy exists).

rlimits bind per process; a cgroup bounds the whole sandbox: total memory (`memory_mb`, plus
`disk_mb` for the sandbox's tmpfs /workspace and /tmp, whose pages are charged as memory: a
full disk then gives ENOSPC, not an OOM kill) and total tasks (`processes` plus a few for bwrap).
cgroup v1 `memory`/`pids` controllers are used where mounted read-write, else cgroup v2 at
/sys/fs/cgroup when it offers them; otherwise `Cgroup.create` returns None and the rlimits alone apply.

    cg = Cgroup.create("rollout-ab12", profile.limits)
    plan = plan_for(profile, run_dir, cgroup=cg.dirs if cg else ())   # each start joins it (`plan.py`)
    ...
    cg.oom_killed(); cg.remove()

Moving a process into a cgroup takes the kernel's global cgroup_threadgroup_rwsem for writing, which
waits for an RCU grace period unless the cgroup2 hierarchy is mounted with `favordynmods` (Linux ≥ 6.1):
on the critical path of every kernel's start: here a zygote kernel was ready in 59 ms (p50) without it and in
49 ms with it; one move took 16 ms under load without it, 0.5 ms with it (`bench/bench_kernel.py` prints it).
Workbench leaves the host's mounts alone: `favordynmods_hint` says how to turn it on.
"""

from __future__ import annotations

import logging
import os
import time
from functools import lru_cache
from pathlib import Path

from workbench.sandbox.profile import Limits

V1 = Path("/sys/fs/cgroup")
_EXTRA_TASKS = 8  # bwrap processes
_log = logging.getLogger(__name__)


def favordynmods_hint(mounts: str) -> str | None:
    """What to run so that moving a process into a cgroup skips an RCU grace period, given the text of
    /proc/mounts; None where it is on already or no cgroup2 hierarchy is mounted."""
    for line in mounts.splitlines():
        fields = line.split()
        if len(fields) > 3 and fields[2] == "cgroup2" and "favordynmods" not in fields[3].split(","):
            return (
                f"each kernel's start waits ~10 ms for an RCU grace period to enter its cgroup; "
                f"`mount -o remount,favordynmods {fields[1]}` (as root, Linux >= 6.1, until reboot) makes it ~0.5 ms"
            )
    return None


@lru_cache(maxsize=1)
def _log_favordynmods_hint() -> None:
    try:
        with open("/proc/mounts") as f:
            hint = favordynmods_hint(f.read())
    except OSError:
        return
    if hint:
        _log.info(hint)


@lru_cache(maxsize=1)
def _sweep_stale() -> None:
    """Remove empty cgroups left by workbench processes that died (e.g. by SIGKILL)."""
    for parent in (V1 / "memory" / "workbench", V1 / "pids" / "workbench", V1 / "workbench"):
        if not parent.is_dir():
            continue
        for d in parent.iterdir():
            owner = d.name.rpartition("-")[2]
            if d.is_dir() and owner.isdigit() and not os.path.exists(f"/proc/{owner}"):
                try:
                    d.rmdir()
                except OSError:
                    pass  # still has tasks, or not ours


def memory_bytes(limits: Limits) -> int:
    """The sandbox's memory limit: what its processes may use plus its tmpfs disk."""
    return (limits.memory_mb + limits.disk_mb) << 20


class Cgroup:
    def __init__(self, dirs: list[Path], version: int) -> None:
        self.dirs, self.version = dirs, version

    @classmethod
    def create(cls, name: str, limits: Limits) -> Cgroup | None:
        """A cgroup named `<name>-<host pid>` with the limits set, or None where unsupported."""
        if os.geteuid() != 0 or os.environ.get("WORKBENCH_NO_CGROUPS"):
            return None
        _sweep_stale()
        _log_favordynmods_hint()
        name = f"{name}-{os.getpid()}"
        mem, pids = V1 / "memory", V1 / "pids"
        cg: Cgroup | None = None
        try:
            if (mem / "cgroup.procs").exists() and (pids / "cgroup.procs").exists():
                dirs = [mem / "workbench" / name, pids / "workbench" / name]
                cg = cls(dirs, 1)
                for d in dirs:
                    d.mkdir(parents=True)
                (dirs[0] / "memory.limit_in_bytes").write_text(str(memory_bytes(limits)))
                (dirs[1] / "pids.max").write_text(str(limits.processes + _EXTRA_TASKS))
                return cg
            controllers = (V1 / "cgroup.controllers").read_text().split()
            if {"memory", "pids"} <= set(controllers):
                parent = V1 / "workbench"
                parent.mkdir(exist_ok=True)
                (parent / "cgroup.subtree_control").write_text("+memory +pids")
                d = parent / name
                d.mkdir()
                cg = cls([d], 2)
                (d / "memory.max").write_text(str(memory_bytes(limits)))
                (d / "memory.swap.max").write_text("0")
                (d / "pids.max").write_text(str(limits.processes + _EXTRA_TASKS))
                return cg
        except OSError:
            if cg is not None:
                cg.remove(wait=0)
        return None

    def oom_killed(self) -> bool:
        """Whether the out-of-memory killer has struck inside this cgroup."""
        name = "memory.oom_control" if self.version == 1 else "memory.events"
        try:
            for line in (self.dirs[0] / name).read_text().splitlines():
                key, _, value = line.partition(" ")
                if key == "oom_kill" and int(value) > 0:
                    return True
        except (OSError, ValueError):
            pass
        return False

    def remove(self, wait: float = 2.0) -> None:
        """Remove the cgroup dirs (waits briefly for exiting tasks to leave)."""
        deadline = time.monotonic() + wait
        for d in self.dirs:
            while True:
                try:
                    d.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    if time.monotonic() > deadline:
                        break
                    time.sleep(0.01)

"""Linux isolation steps a forked zygote child applies to itself (stdlib + ctypes, no exec).

The zygote (see `workbench.kernel.zygote`) runs as root inside a bwrap that gives it the
profile's read-only filesystem view; each child then calls, in order:

    enter_namespaces(network)      # own mount, PID, IPC, UTS, cgroup (and network) namespaces
    mount_private(mounts)          # its tmpfs /workspace, /tmp; its run dir; its extra binds
    ... fork: the child's child is PID 1 of the new namespace ...
    mount_proc()                   # a /proc of its own PID namespace (sys, irq, bus read-only)
    ... fork: the kernel ...
    apply_rlimits(rlimits); become_unprivileged(uid, gid)

What to apply comes from the kernel's isolation plan, as the zygote request carries it
(`workbench.sandbox.zygote.ZygoteRequest`).

Every call raises `OSError` with errno on failure (the child then exits non-zero).
"""

from __future__ import annotations

import ctypes
import fcntl
import os
import resource
import socket
import struct
from collections.abc import Iterable
from dataclasses import dataclass

CLONE_NEWNS = 0x00020000
CLONE_NEWCGROUP = 0x02000000
CLONE_NEWUTS = 0x04000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 32, 4096, 16384, 1 << 18
MNT_DETACH = 2
PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_CAPBSET_DROP, PR_SET_NO_NEW_PRIVS = 1, 4, 24, 38
PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL = 47, 4
_CAP_VERSION_3 = 0x20080522
_SIOCGIFFLAGS, _SIOCSIFFLAGS, _IFF_UP = 0x8913, 0x8914, 0x1
_MB = 1 << 20
_SYS_OPEN_TREE, _SYS_MOVE_MOUNT = 428, 429  # the same on x86_64 and aarch64
_OPEN_TREE_CLONE, _AT_RECURSIVE, _MOVE_MOUNT_F_EMPTY_PATH = 1, 0x8000, 4

_libc = ctypes.CDLL(None, use_errno=True)


def _check(result: int, what: str) -> None:
    if result != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def unshare(flags: int) -> None:
    _check(_libc.unshare(ctypes.c_int(flags)), f"unshare({flags:#x})")


def mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    enc = [None if s is None else s.encode() for s in (source, target, fstype, data)]
    _check(_libc.mount(enc[0], enc[1], enc[2], ctypes.c_ulong(flags), enc[3]), f"mount {source} on {target}")


def prctl(option: int, arg: int) -> None:
    _check(_libc.prctl(option, ctypes.c_ulong(arg), 0, 0, 0), f"prctl({option})")


def clone_mount(path: str, recursive: bool = False) -> int:
    """A detached copy of the mount at `path` (an fd): the one way to hand a host directory to a
    process in another mount namespace (a plain bind from a passed fd is refused there)."""
    flags = _OPEN_TREE_CLONE | os.O_CLOEXEC | (_AT_RECURSIVE if recursive else 0)
    fd = int(_libc.syscall(_SYS_OPEN_TREE, -100, path.encode(), ctypes.c_uint(flags)))
    if fd < 0:
        err = ctypes.get_errno()
        raise OSError(err, f"open_tree({path}): {os.strerror(err)}")
    return fd


def attach_mount(fd: int, target: str) -> None:
    """Attach a `clone_mount` fd at `target` in this mount namespace."""
    result = _libc.syscall(_SYS_MOVE_MOUNT, fd, b"", -100, target.encode(), ctypes.c_uint(_MOVE_MOUNT_F_EMPTY_PATH))
    _check(result, f"move_mount to {target}")


@dataclass(frozen=True)
class MountPlan:
    """One child's private mounts (the fds are `clone_mount`s the host sent)."""

    run_fd: int  # the kernel dir's run/, read-write
    run_inside: str  # /run/workbench
    ro_binds: tuple[tuple[int, str], ...]  # (fd of a host path, path inside)
    scratch: tuple[tuple[str, int, int], ...]  # fresh tmpfs mounts: (path inside, MiB, mode)


def enter_namespaces(network: bool) -> None:
    """New mount, PID (for children), IPC, UTS and cgroup namespaces; a new network one unless
    the profile shares the host's (then nothing changes there)."""
    flags = CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWCGROUP
    unshare(flags | (0 if network else CLONE_NEWNET))
    if not network:
        _loopback_up()


def _loopback_up() -> None:
    """Bring `lo` up in a fresh network namespace (as bwrap does): 127.0.0.1 works inside only."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        req = struct.pack("16sh", b"lo", 0)
        flags = struct.unpack("16sh", fcntl.ioctl(s, _SIOCGIFFLAGS, req + b"\0" * 22)[:18])[1]
        fcntl.ioctl(s, _SIOCSIFFLAGS, struct.pack("16sh", b"lo", flags | _IFF_UP) + b"\0" * 22)


def mount_private(plan: MountPlan) -> None:
    """Private tmpfs /tmp and workspace, the run dir, the extra read-only binds."""
    mount(None, "/", None, MS_REC | MS_PRIVATE)  # nothing propagates back to the zygote
    for inside, size_mb, mode in plan.scratch:
        mount("tmpfs", inside, "tmpfs", MS_NOSUID | MS_NODEV, f"mode={mode:o},size={size_mb * _MB}")
    attach_mount(plan.run_fd, plan.run_inside)
    mount(None, plan.run_inside, None, MS_BIND | MS_REMOUNT | MS_NOSUID | MS_NODEV)
    for fd, inside in plan.ro_binds:
        _mountpoint(inside, is_dir=os.path.isdir(f"/proc/self/fd/{fd}"))
        attach_mount(fd, inside)
        mount(None, inside, None, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV)


def _mountpoint(inside: str, is_dir: bool) -> None:
    """Create a mount point (and world-traversable parents) in the zygote's root tmpfs."""
    parent = os.path.dirname(inside)
    os.makedirs(parent, mode=0o755, exist_ok=True)
    if is_dir:
        os.makedirs(inside, mode=0o755, exist_ok=True)
    elif not os.path.exists(inside):
        os.close(os.open(inside, os.O_CREAT | os.O_WRONLY, 0o644))


def mount_proc() -> None:
    """As PID 1 of the new namespace: a /proc that shows it alone, kernel knobs read-only."""
    mount(None, "/proc", None, MS_REC | MS_PRIVATE)
    _check(_libc.umount2(b"/proc", MNT_DETACH), "umount /proc")
    mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    for sub in ("/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus"):
        if os.path.exists(sub):
            mount(sub, sub, None, MS_BIND | MS_REC)
            mount(None, sub, None, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC)


RLIMITS = {  # prlimit's names (an isolation plan's) → setrlimit's
    "as": resource.RLIMIT_AS,
    "nproc": resource.RLIMIT_NPROC,
    "cpu": resource.RLIMIT_CPU,
    "fsize": resource.RLIMIT_FSIZE,
    "nofile": resource.RLIMIT_NOFILE,
    "core": resource.RLIMIT_CORE,
}


def apply_rlimits(rlimits: Iterable[tuple[str, int]]) -> None:
    """The plan's rlimits, soft and hard: the values prlimit sets for exec'd kernels."""
    for name, value in rlimits:
        resource.setrlimit(RLIMITS[name], (value, value))


def detached_proc_sys() -> int:
    """As root: a directory fd on `sys/` of a fresh, writable proc mount that is already
    detached (reachable through this fd alone; /proc/sys itself stays read-only)."""
    mount("proc", "/tmp", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)  # over /tmp for a moment
    fd = os.open("/tmp/sys", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    _check(_libc.umount2(b"/tmp", MNT_DETACH), "umount the proc on /tmp")
    return fd


def become_unprivileged(uid: int, gid: int, proc_sys_fd: int) -> None:
    """Root → `uid`: no groups, no capabilities (bounding, ambient, effective), no new
    privileges, inside a user namespace that may create no further user namespaces (as
    bwrap --disable-userns: its limit is set to one, which its nested namespace uses up)."""
    _drop_bounding_set()
    os.setgroups([])
    os.setresgid(gid, gid, gid)
    os.setresuid(uid, uid, uid)  # clears the permitted and effective sets
    prctl(PR_SET_DUMPABLE, 1)  # as an exec'd process is: /proc/self is then its own to write
    prctl(PR_SET_NO_NEW_PRIVS, 1)
    _own_user_namespace(uid, gid)
    limit = os.open("user/max_user_namespaces", os.O_WRONLY | os.O_CLOEXEC, dir_fd=proc_sys_fd)
    try:
        os.write(limit, b"1")
    finally:
        os.close(limit)
        os.close(proc_sys_fd)
    _own_user_namespace(uid, gid)
    _drop_bounding_set()
    _clear_capabilities()


def _own_user_namespace(uid: int, gid: int) -> None:
    unshare(CLONE_NEWUSER)
    _write("/proc/self/setgroups", "deny")
    _write("/proc/self/uid_map", f"{uid} {uid} 1")
    _write("/proc/self/gid_map", f"{gid} {gid} 1")


def _drop_bounding_set() -> None:
    last = int(open("/proc/sys/kernel/cap_last_cap").read())
    for cap in range(last + 1):
        prctl(PR_CAPBSET_DROP, cap)
    _libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)


def _clear_capabilities() -> None:
    header = (ctypes.c_uint32 * 2)(_CAP_VERSION_3, 0)
    data = (ctypes.c_uint32 * 6)()  # effective, permitted, inheritable × 2 words, all zero
    _check(_libc.capset(header, data), "capset")


def _write(path: str, text: str) -> None:
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)

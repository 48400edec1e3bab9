"""Kernel dirs (each kernel's private directory on the host) and the unprivileged uid each sandbox runs as.

    <root>/                   0700 (the outer bwrap binds as root, so no one else needs in)
    <root>/<name>/            0700
        run/                  → /run/workbench inside (connection file, ipc sockets, gateway.sock);
                              as root: root:<sandbox gid> 0770, sealed to 0750 once the kernel
                              has bound its sockets, so the sandbox can no longer create files
        work/                 cwd of unsandboxed kernels only (a sandbox's /workspace is a tmpfs)
        outputs/              full text of truncated observations (host only, not bound)

Uids come from a range (default 60000–60999); a lease is an flock on a small file under
`/tmp/workbench-uids`, so concurrent processes and pool slots never share a uid (per-uid
limits then bind per kernel, and one sandbox cannot read another's kernel dir).
"""

from __future__ import annotations

import fcntl
import os
import re
import secrets
import shutil
import stat
import tempfile
import threading
import time
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from workbench.errors import SandboxError

UID_BASE = int(os.environ.get("WORKBENCH_UID_BASE", "60000"))
UID_COUNT = 1000
# One place for every workbench process on the machine, whatever its TMPDIR: two lease dirs would
# let two processes hand out the same uid (shared per-uid limits, one sandbox reading another's dir).
_LEASE_DIR = Path(os.environ.get("WORKBENCH_UID_LEASE_DIR", "/tmp/workbench-uids"))


def _require_private_dir(path: Path) -> None:
    """A directory made in a shared temp dir must be ours: real (no symlink), this user's, closed to others.

    Another local user could create the name first; reusing it would hand them the sandbox's files."""
    st = os.lstat(path)
    if stat.S_ISLNK(st.st_mode) or not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o077:
        raise SandboxError(
            f"{path} is not a private directory of this user (it is a symlink, another user's, or open to "
            f"others: uid {st.st_uid}, mode {stat.S_IMODE(st.st_mode):o}); remove it, or pass another root"
        )


class UidLease:
    """An exclusive claim on one uid from the range; `release()` (or GC) gives it back."""

    def __init__(self) -> None:
        _LEASE_DIR.mkdir(mode=0o700, exist_ok=True)
        _require_private_dir(_LEASE_DIR)
        start = secrets.randbelow(UID_COUNT)  # spread out so concurrent claimers rarely collide
        for i in range(UID_COUNT):
            uid = UID_BASE + (start + i) % UID_COUNT
            fd = os.open(_LEASE_DIR / str(uid), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                continue
            self.uid, self._fd = uid, fd
            return
        raise SandboxError(
            f"all {UID_COUNT} sandbox uids from {UID_BASE} are in use; close "
            "some kernels or set WORKBENCH_UID_BASE to a free range"
        )

    def release(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def __del__(self) -> None:
        self.release()


def default_root() -> Path:
    """Where kernel dirs go unless told: a per-process dir in `kernel_dir_base()`."""
    return kernel_dir_base() / f"workbench-rollouts-{os.getpid()}"


_SHM = Path("/dev/shm")
_OCTAL = re.compile(r"\\([0-7]{3})")
_SHM_MIN_FREE = 1 << 30


@lru_cache(maxsize=1)
def kernel_dir_base() -> Path:
    """The system temp dir; or /dev/shm where TMPDIR is unset, the temp dir is on disk and /dev/shm
    is a tmpfs with 1 GiB free. A kernel dir (its kernel's sockets, connection file, log and
    outputs) lives only as long as its kernel, and creating and removing those files on a disk file
    system took ~10% of the CPU of 64 kernels starting at once (bench/bench_kernel.py); set TMPDIR,
    or pass `root=`, to choose."""
    temp = Path(tempfile.gettempdir())
    try:
        with open("/proc/self/mountinfo") as f:
            mountinfo = f.read()
        room = os.statvfs(_SHM)
    except OSError:
        return temp
    return choose_base(temp, "TMPDIR" in os.environ, mountinfo, room.f_bavail * room.f_frsize)


def choose_base(temp: Path, tmpdir_set: bool, mountinfo: str, shm_free: int) -> Path:
    """`kernel_dir_base()`'s rule, given what it reads."""
    if tmpdir_set or filesystem(temp, mountinfo) == "tmpfs" or filesystem(_SHM, mountinfo) != "tmpfs":
        return temp
    return _SHM if shm_free >= _SHM_MIN_FREE else temp


def filesystem(path: Path, mountinfo: str) -> str:
    """The type of the file system `path` is on, from a `/proc/self/mountinfo` text ('' if none)."""
    target = os.path.realpath(path)
    best, kind = "", ""
    for line in mountinfo.splitlines():
        left, _, right = line.partition(" - ")
        fields, after = left.split(), right.split()
        if len(fields) < 5 or not after:
            continue
        point = _OCTAL.sub(lambda m: chr(int(m[1], 8)), fields[4])  # mountinfo writes a space as \040
        inside = target == point or target.startswith(point.rstrip("/") + "/")
        if inside and len(point) >= len(best):
            best, kind = point, after[0]
    return kind


@dataclass
class KernelDir:
    """One kernel's private directory (see the module's docstring); `create` makes it."""

    path: Path
    uid: int | None

    @property
    def run(self) -> Path:
        return self.path / "run"

    @property
    def work(self) -> Path:
        return self.path / "work"

    @property
    def outputs(self) -> Path:
        return self.path / "outputs"

    @classmethod
    def create(cls, root: Path, uid: int | None, name: str | None = None) -> KernelDir:
        root = Path(root)
        shared = _ROOT_RE.fullmatch(root.name) is not None  # a default-style root in a shared temp dir
        root = root.parent.resolve() / root.name  # the last part is checked, never followed
        path = root / (name or f"rollout-{secrets.token_hex(6)}")
        _sweep_in_background()
        for _ in range(3):  # the (empty) root may be removed by a closing kernel meanwhile
            root.mkdir(mode=0o700, parents=True, exist_ok=True)
            if shared:
                _require_private_dir(root)
            try:
                _claim_root(root)
                path.mkdir(mode=0o700)
                break
            except FileNotFoundError:
                continue
        rd = cls(path, uid)
        for sub in (rd.run, rd.work, rd.outputs):
            sub.mkdir(mode=0o700)
        if uid is not None:
            for p in (path, rd.work):
                os.chown(p, uid, uid)
            os.chown(rd.run, -1, uid)
            os.chmod(rd.run, 0o770)
        return rd

    def seal(self) -> None:
        """Take away the sandbox's right to create files in run/ (it keeps read and connect)."""
        if self.uid is not None:
            os.chmod(self.run, 0o750)

    def share(self, path: str | os.PathLike[str]) -> None:
        """Let the sandbox uid use a host-made file in run/: connect to a socket, read a file."""
        if self.uid is not None:
            os.chown(path, -1, self.uid)
            os.chmod(path, 0o660 if stat.S_ISSOCK(os.stat(path).st_mode) else 0o640)

    def remove(self) -> None:
        shutil.rmtree(self.path, ignore_errors=True)


RolloutDir = KernelDir  # deprecated name (docs/glossary.md: a rollout is an episode through the model gateway)
rollout_base = kernel_dir_base  # deprecated name


# -- stale default roots ------------------------------------------------------------------
# A process marks its default root as live with a shared flock on the directory, held (by an
# O_CLOEXEC fd) until the process exits, even by SIGKILL. A root is stale when no one holds that
# lock and the pid in its name is gone, or now names a process that started after the root was
# last changed (the pid was reused). Roots made before the lock existed get the pid checks alone.

_ROOT_RE = re.compile(r"workbench-rollouts-([0-9]{1,10})")
_HELD: dict[Path, int] = {}  # root → fd holding its shared lock
_HELD_LOCK = threading.Lock()
_REUSE_SLACK_S = 1.0  # clock fuzz when comparing a process's start with a directory's times


def _claim_root(root: Path) -> None:
    """Hold a shared lock on a default-style root for the rest of this process's life."""
    if not _ROOT_RE.fullmatch(root.name):
        return
    with _HELD_LOCK:
        st = os.stat(root, follow_symlinks=False)
        fd = _HELD.pop(root, None)
        if fd is not None:
            held = os.fstat(fd)
            if (held.st_dev, held.st_ino) == (st.st_dev, st.st_ino):
                _HELD[root] = fd
                return
            os.close(fd)  # that directory was removed; this is a new one
        fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        fcntl.flock(fd, fcntl.LOCK_SH)  # waits only while a sweeper looks at it
        _HELD[root] = fd


@lru_cache(maxsize=1)
def _sweep_in_background() -> None:
    """Sweep stale roots once per process, off the caller's path (rmtree can take a while), in
    both places a default root may be."""

    def sweep() -> None:
        for base in {kernel_dir_base(), Path(tempfile.gettempdir())}:
            sweep_stale_roots(base)

    threading.Thread(target=sweep, name="workbench-root-sweep", daemon=True).start()


def sweep_stale_roots(base: str | os.PathLike[str] | None = None) -> list[Path]:
    """Remove `<base>/workbench-rollouts-<pid>` dirs whose process is gone; return them.

    `base` defaults to `kernel_dir_base()`. Only this user's directories are considered;
    symlinks are never followed, and nothing outside those directories is removed.
    """
    base = Path(base if base is not None else kernel_dir_base())
    try:
        base_fd = os.open(base, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return []
    removed = []
    try:
        with os.scandir(base_fd) as entries:
            names = [e.name for e in entries if _ROOT_RE.fullmatch(e.name) and e.is_dir(follow_symlinks=False)]
        for name in names:
            if _remove_if_stale(base_fd, name):
                removed.append(base / name)
    finally:
        os.close(base_fd)
    return removed


def _remove_if_stale(base_fd: int, name: str) -> bool:
    match = _ROOT_RE.fullmatch(name)
    if match is None or int(match[1]) == os.getpid():
        return False
    try:
        fd = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=base_fd)
    except OSError:
        return False  # gone, a symlink, or not ours to open
    try:
        st = os.fstat(fd)
        if st.st_uid != os.geteuid():
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False  # a live process holds it
        if _owner_alive(int(match[1]), st.st_mtime):
            return False
        now = os.stat(name, dir_fd=base_fd, follow_symlinks=False)
        if (now.st_dev, now.st_ino) != (st.st_dev, st.st_ino):
            return False  # replaced since it was opened
        failed: list[str] = []
        shutil.rmtree(name, dir_fd=base_fd, onerror=lambda *a: failed.append(str(a[1])))
        return not failed
    except OSError:
        return False
    finally:
        os.close(fd)


def _owner_alive(pid: int, changed_at: float) -> bool:
    """Whether `pid` may still be the process that last changed its root (at `changed_at`)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat_line = f.read()
        with open("/proc/uptime", "rb") as f:
            uptime = float(f.read().split()[0])
        now = time.time()
    except (OSError, ValueError):
        return False  # no such process
    fields = stat_line[stat_line.rindex(b")") + 2 :].split()
    if fields[0] in (b"Z", b"X"):
        return False  # exited, not yet reaped
    started = now - uptime + int(fields[19]) / os.sysconf("SC_CLK_TCK")
    return started <= changed_at + _REUSE_SLACK_S

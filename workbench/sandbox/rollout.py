"""Per-rollout directories and the unprivileged uid each sandbox runs as.

    <root>/                   0700 (the outer bwrap binds as root, so no one else needs in)
    <root>/<name>/            0700
        run/                  → /run/workbench inside (connection file, ipc sockets, gateway.sock);
                              as root: root:<sandbox gid> 0770, sealed to 0750 once the kernel
                              has bound its sockets, so the sandbox can no longer create files
        work/                 cwd of unsandboxed kernels only (a sandbox's /workspace is a tmpfs)
        outputs/              full text of truncated observations (host only, not bound)

Uids come from a range (default 60000–60999); a lease is an flock on a small file under
`/tmp/workbench-uids`, so concurrent processes and pool slots never share a uid (per-uid
limits then bind per kernel, and one sandbox cannot read another's rollout dir).
"""

from __future__ import annotations

import fcntl
import os
import secrets
import shutil
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path

from workbench.errors import SandboxError

UID_BASE = int(os.environ.get("WORKBENCH_UID_BASE", "60000"))
UID_COUNT = 1000
_LEASE_DIR = Path(tempfile.gettempdir()) / "workbench-uids"


class UidLease:
    """An exclusive claim on one uid from the range; `release()` (or GC) gives it back."""

    def __init__(self) -> None:
        _LEASE_DIR.mkdir(mode=0o700, exist_ok=True)
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
        raise SandboxError(f"all {UID_COUNT} sandbox uids from {UID_BASE} are in use; close "
                           "some kernels or set WORKBENCH_UID_BASE to a free range")

    def release(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def __del__(self) -> None:
        self.release()


def default_root() -> Path:
    """Where rollout dirs go unless told: a per-process dir under the system temp dir."""
    return Path(tempfile.gettempdir()) / f"workbench-rollouts-{os.getpid()}"


@dataclass
class RolloutDir:
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
    def create(cls, root: Path, uid: int | None, name: str | None = None) -> RolloutDir:
        root = Path(root).resolve()
        path = root / (name or f"rollout-{secrets.token_hex(6)}")
        for _ in range(3):  # the (empty) root may be removed by a closing kernel meanwhile
            root.mkdir(mode=0o700, parents=True, exist_ok=True)
            try:
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

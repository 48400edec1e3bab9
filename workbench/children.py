"""Child processes that must not outlive the process that started them."""

from __future__ import annotations

import ctypes
import os
import signal

_PR_SET_PDEATHSIG = 1


def die_with_parent(sig: int = signal.SIGKILL, parent: int | None = None) -> None:
    """Ask Linux to send `sig` to this process when its parent exits (however it exits), so a
    worker is never left running after a killed parent. A no-op where prctl is unavailable.
    `parent`: the pid this process was started by; if it died before this call (a worker still
    starting up), the signal comes now instead of never."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, int(sig), 0, 0, 0)
    except (OSError, AttributeError):
        pass
    if parent is not None and os.getppid() != parent:
        os.kill(os.getpid(), sig)

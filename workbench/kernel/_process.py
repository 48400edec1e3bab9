"""Process plumbing for sandboxed kernels: the launch argv, pidfd waits, the zmq context."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import os
import signal
import sys
import time
from typing import Any

import zmq.asyncio

from workbench.errors import KernelError
from workbench.runtime.wire import PACKER
from workbench.sandbox import INSIDE_RUN, KernelDir, build_argv
from workbench.sandbox.plan import IsolationPlan

DELIM = b"<IDS|MSG>"
CHANNELS = {"shell": 1, "iopub": 2, "stdin": 3, "control": 4, "hb": 5}
_IPC_MAX = 100  # sun_path is 108 bytes
_HISTORY_OFF = "--HistoryManager.enabled=False"
_HISTORY_ON = "--HistoryManager.hist_file=:memory:"
_CTX: zmq.asyncio.Context | None = None


def context() -> zmq.asyncio.Context:
    global _CTX  # one zmq context (and io thread) for every kernel in the process
    if _CTX is None:
        _CTX = zmq.asyncio.Context()
    return _CTX


def connection_info(ip: str, key: str, signature_scheme: str = "hmac-sha256") -> dict[str, str | int]:
    """A kernel's connection file contents: ipc sockets at `ip`-N, messages signed with `key`."""
    return {
        "transport": "ipc",
        "ip": ip,
        "signature_scheme": signature_scheme,
        "key": key,
        "kernel_name": "workbench",
        **{f"{c}_port": n for c, n in CHANNELS.items()},
    }


def write_connection_file(
    kernel_dir: KernelDir, key: str, *, sandboxed: bool = True, signature_scheme: str = "hmac-sha256"
) -> str:
    """Write the ipc connection file into run/; return the host-side ipc path prefix."""
    host_ip = str(kernel_dir.run / "k")
    if len(host_ip) > _IPC_MAX:
        raise KernelError(f"kernel dir path {kernel_dir.run} is too long for a unix socket; pass a shorter root=")
    cf = kernel_dir.run / "kernel.json"
    cf.write_text(json.dumps(connection_info(f"{INSIDE_RUN}/k" if sandboxed else host_ip, key, signature_scheme)))
    os.chmod(cf, 0o600)
    kernel_dir.share(cf)
    return host_ip


def ipykernel_args(connection_file: str, history: bool = False) -> list[str]:
    """ipykernel's arguments (after `-m ipykernel_launcher`)."""
    return ["-f", connection_file, _HISTORY_ON if history else _HISTORY_OFF, f"--Session.packer={PACKER}", "--quiet"]


def kernel_argv(
    kernel_dir: KernelDir,
    key: str,
    plan: IsolationPlan | None,
    *,
    signature_scheme: str = "hmac-sha256",
    history: bool = False,
) -> tuple[list[str], str]:
    """Write the ipc connection file into run/ and return (argv, host-side ipc path prefix): the kernel
    sandboxed as `plan` says (`build_argv`), or unsandboxed where `plan` is None.

    `history=False` (rollouts) turns IPython's input history off: it costs start time and a
    little per cell, and nothing reads it. `history=True` (the interactive kernelspec) keeps it
    in an in-memory SQLite database: %history and console history work, and it ends with the
    kernel (no file on the host or in the sandbox).
    """
    sandboxed = plan is not None
    host_ip = write_connection_file(kernel_dir, key, sandboxed=sandboxed, signature_scheme=signature_scheme)
    cf = f"{INSIDE_RUN}/kernel.json" if sandboxed else str(kernel_dir.run / "kernel.json")
    kernel = [sys.executable, "-m", "ipykernel_launcher", *ipykernel_args(cf, history)]
    if plan is None:
        return kernel, host_ip
    return build_argv(plan, kernel), host_ip


def decode(frames: list[bytes], key: bytes) -> tuple[bytes, bytes, bytes] | None:
    """Check a wire message's HMAC; return its raw (header, parent_header, content) JSON.

    Leaner than `Session.deserialize` (no date parsing), which is most of a round trip's
    client-side cost; callers decode only the parts they need.
    """
    try:
        i = frames.index(DELIM)
        signature, header, parent, metadata, content = frames[i + 1 : i + 6]
    except ValueError:
        return None
    mac = hmac.new(key, digestmod=hashlib.sha256)
    for part in (header, parent, metadata, content):
        mac.update(part)
    if not hmac.compare_digest(mac.hexdigest().encode(), signature):
        return None
    return header, parent, content


def kill_quietly(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def pidfds(pids: list[int]) -> list[int]:
    fds = []
    for pid in pids:
        try:
            fds.append(os.pidfd_open(pid))
        except OSError:
            pass  # already gone
    return fds


async def all_gone(fds: list[int]) -> None:
    """Wait (no polling: a pidfd turns readable when its process exits) for all to exit."""
    loop = asyncio.get_running_loop()

    def exited(fut: asyncio.Future[None], fd: int) -> None:
        loop.remove_reader(fd)
        if not fut.done():
            fut.set_result(None)

    futs: list[asyncio.Future[None]] = []
    for fd in fds:
        fut: asyncio.Future[None] = loop.create_future()
        loop.add_reader(fd, exited, fut, fd)
        futs.append(fut)
    try:
        await asyncio.gather(*futs)
    finally:
        for fd in fds:
            loop.remove_reader(fd)


async def all_or_death(futs: list[asyncio.Future[Any]], died: asyncio.Future[int], timeout: float | None) -> bool:
    """Wait until every fut is done (True), or the kernel dies / time runs out (False)."""
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        pending = [f for f in futs if not f.done()]
        if not pending:
            return True
        if died.done():
            return False
        left = None if deadline is None else deadline - time.monotonic()
        if left is not None and left <= 0:
            return False
        await asyncio.wait([*pending, died], timeout=left, return_when=asyncio.FIRST_COMPLETED)

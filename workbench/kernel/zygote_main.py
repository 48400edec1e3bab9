"""The zygote process itself (runs as root inside its profile's bwrap; see `workbench.kernel.zygote`).

    python -m workbench.kernel.zygote_main CONTROL_FD KERNEL_ARGS_JSON [MODULE ...]

It imports what a kernel needs and builds the half of ipykernel's app that depends only on
KERNEL_ARGS (`workbench.kernel.zygote_app`), then serves spawn requests on CONTROL_FD (a SOCK_SEQPACKET
socket): one `ZygoteRequest` (`workbench.sandbox.zygote`: the per-kernel stage of the kernel's isolation
plan) plus file descriptors in, one fork, `{"pid": N}` plus a pidfd out.
No zmq context, event loop or thread exists before a fork; every child builds its own.

A child runs three processes, like bwrap's:

    outer (root, host's PID namespace)  joins its cgroup, unshares, mounts; reports the exit status
      init (root, PID 1 of the child's own PID namespace)  mounts /proc, reaps
        kernel (the sandbox uid, no capabilities)  rlimits, env allow-list, then IPKernelApp

Each dies with its parent (PR_SET_PDEATHSIG), so killing the zygote or the outer process ends
the whole child; the init's death ends its PID namespace.
"""

from __future__ import annotations

import gc
import importlib
import json
import os
import signal
import socket
import sys
import threading
import traceback
from typing import NoReturn

from workbench.children import die_with_parent
from workbench.kernel import zygote_app
from workbench.sandbox.zygote import ZygoteRequest

PRELOAD = (  # what IPKernelApp.initialize() imports (its debugger's debugpy is most of the time)
    "ipykernel.kernelapp",
    "ipykernel.ipkernel",
    "ipykernel.zmqshell",
    "ipykernel.debugger",
    "IPython.core.interactiveshell",
    "IPython.core.completer",
    "IPython.core.completerlib",
    "IPython.core.debugger",
    "IPython.core.oinspect",
    "IPython.extensions.storemagic",
    "tornado.platform.asyncio",
    "jupyter_client.session",
    "workbench.runtime",
    "workbench.runtime.wire",
    "workbench.runtime.fork",  # kernel.fork: what a child's load (and a parent's save) imports
    "cloudpickle",
    "workbench.sandbox.isolate",
    "workbench.sandbox.zygote",
)
_MAX_FDS = 64


def main(argv: list[str]) -> int:
    control = socket.socket(fileno=int(argv[0]))
    kernel_args = json.loads(argv[1])
    for name in (*PRELOAD, *argv[2:]):
        importlib.import_module(name)
    app = zygote_app.prepare(kernel_args)
    if threading.active_count() != 1:
        control.send(b"error: an import or the app's set-up started a thread; fork would be unsafe")
        return 1
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # outer processes are reaped by the kernel
    gc.collect()
    gc.freeze()  # keep the imported objects' pages shared with children
    control.send(f"ready {os.getpid()}".encode())
    while True:
        try:
            msg, fds, _, _ = socket.recv_fds(control, 1 << 20, _MAX_FDS)
        except ConnectionResetError:
            return 0
        if not msg:
            return 0  # the host is gone
        zygote = os.getpid()
        pid = os.fork()
        if pid == 0:
            control.close()
            request = ZygoteRequest.decode(msg)
            _outer(request, fds, zygote, app if list(request.args) == kernel_args else None)
        for fd in fds:
            os.close(fd)
        pidfd = os.pidfd_open(pid)
        socket.send_fds(control, [json.dumps({"pid": pid}).encode()], [pidfd])
        os.close(pidfd)


def _outer(req: ZygoteRequest, fds: list[int], zygote: int, app: zygote_app.PreparedApp | None) -> NoReturn:
    from workbench.sandbox import isolate

    run_fd, log_fd, status_fd, *rest = fds
    cgroup_fds, bind_fds = rest[: req.cgroups], rest[req.cgroups :]
    code = 1
    try:
        die_with_parent()
        if os.getppid() != zygote:
            raise RuntimeError("the zygote died while forking")  # before the death signal was armed
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        os.setsid()
        for fd in cgroup_fds:
            os.write(fd, str(os.getpid()).encode())
            os.close(fd)
        isolate.enter_namespaces(req.network)
        mounts = isolate.MountPlan(run_fd, req.run, tuple(zip(bind_fds, req.binds, strict=True)), req.scratch)
        isolate.mount_private(mounts)
        for fd in (run_fd, *bind_fds):
            os.close(fd)
        init = os.fork()
        if init == 0:
            os.close(status_fd)
            _init(req, log_fd, app)
        os.close(log_fd)
        code = os.waitstatus_to_exitcode(os.waitpid(init, 0)[1])
        os.write(status_fd, str(code).encode())
    except BaseException:
        _report(log_fd)
    os._exit(0 if code == 0 else 1)


def _init(req: ZygoteRequest, log_fd: int, app: zygote_app.PreparedApp | None) -> NoReturn:
    from workbench.sandbox import isolate

    code = 1
    try:
        die_with_parent()
        isolate.mount_proc()
        kernel = os.fork()
        if kernel == 0:
            _kernel(req, log_fd, app)
        os.close(log_fd)
        while True:  # as PID 1: reap every orphan until the kernel itself exits
            pid, status = os.wait()
            if pid == kernel:
                code = os.waitstatus_to_exitcode(status)
                break
    except BaseException:
        _report(log_fd)
    os._exit(code if code >= 0 else 128 - code)


def _kernel(req: ZygoteRequest, log_fd: int, app: zygote_app.PreparedApp | None) -> NoReturn:
    """The kernel process: isolated, then the zygote's prepared app finished (or, for a request
    with other arguments than the zygote prepared, ipykernel's whole start)."""
    from workbench.sandbox import isolate

    try:
        os.setsid()
        proc_sys = isolate.detached_proc_sys()
        isolate.apply_rlimits(req.rlimits)
        os.chdir(req.cwd)
        isolate.become_unprivileged(req.uid, req.gid, proc_sys)
        os.environ.clear()
        os.environ.update(req.env)
        devnull = os.open("/dev/null", os.O_RDONLY)
        os.dup2(devnull, 0)
        os.dup2(log_fd, 1)
        os.dup2(log_fd, 2)
        os.closerange(3, 1 << 16)
        sys.argv = ["ipykernel_launcher", *req.args]
        zygote_app.run_prepared(app) if app is not None else zygote_app.run_unprepared()
    except BaseException:
        _report(log_fd if log_fd > 2 else 2)
        os._exit(1)
    os._exit(0)


def _report(fd: int) -> None:
    try:
        os.write(fd, traceback.format_exc().encode(errors="replace"))
    except OSError:
        pass


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""Zygote kernels: one pre-imported process per sandbox profile forks each new kernel.

    k = AsyncKernel(start="zygote")        # the default where the machine supports it
    k = AsyncKernel(start="exec")          # bwrap + a fresh interpreter, as the kernelspec does

An exec'd kernel pays for a new interpreter and ipykernel's imports each time; a zygote has
imported them once (ipykernel, IPython, `workbench.runtime`, the profile's `preload`), with
thread pools pinned to one thread and no zmq context, event loop or thread yet, and forks.
It has also done the half of ipykernel's start that depends only on the kernel's arguments
(argument parsing, profile and config files, the `InteractiveShell`: `workbench.kernel.zygote_app`),
so a child isolates itself and then builds only its sockets, threads and kernel object. What a
start costs (`bench/bench_kernel.py --only-zygote`, idle machine): 44 ms of CPU over the three
processes up to the first `1+1` answered (75-85 ms at load 2.5-5), 49-59 ms of wall time: ipykernel's
connection, sockets, kernel object and first replies about half of it, the forks, namespaces, mounts
and uid change a quarter; the move into the kernel's cgroup adds ~10 ms of waiting unless cgroup2 has
`favordynmods` (`workbench.sandbox.cgroups`). The bench also starts the same ipykernel forked with no
sandbox at all (`bench/kernel_floor.py`): a zygote start takes 1.2-1.4x that floor, alone or 64 at once.

A kernel's sandbox is one isolation plan (`workbench.sandbox.plan`), whichever way it starts: the
zygote renders its per-profile part as its own bwrap (`zygote_argv`) and each kernel's part as a typed
request (`ZygoteRequest`) that the child applies to itself. Where each property comes from (same as an
exec'd kernel unless said; `workbench.sandbox.zygote.RENDERS` names the function for each plan field):

    filesystem view        the zygote's bwrap: system dirs, Python, profile binds read-only;
                           minimal /etc; /dev; no host file beyond those
    /workspace, /tmp       per child: fresh size-capped tmpfs mounts in its own mount namespace
    /run/workbench         per child: its run dir bound from an fd the host passes (SCM_RIGHTS)
    extra_ro_binds         per child: bound read-only from host fds the same way
    mount, PID, IPC, UTS,  per child: unshare() in the child; PID 1 of its namespace is a root
    cgroup, network ns     init that mounts its own /proc (sys, irq, bus read-only); `lo` is up
    unprivileged uid       per child: setresuid to its leased uid, groups cleared
    capabilities           bounding, ambient, permitted and effective sets emptied; no_new_privs
    user namespace         per child: its own, which may create no further one (as bwrap's
                           --disable-userns: the nested namespace uses up a limit of one)
    rlimits                per child: setrlimit, the values prlimit gives exec'd kernels
    cgroup                 per child: the host opens cgroup.procs and passes the fd; the child
                           joins before it unshares, so all its processes are in it
    environment            per child: cleared, then exactly the allow-listed env an exec'd
                           kernel gets (computed by the host for each kernel)
    dies with the host     host → bwrap (--die-with-parent) → zygote → child's outer process →
                           init → namespace, each by PR_SET_PDEATHSIG

Weaker than exec, and why (recorded as data too: `Unsupported` and `weaker` in `RENDERS`):
  - Address-space layout: children share the zygote's ASLR layout (fork copies it), so one
    kernel's leaked pointers predict another's. Kernels already run only unprivileged code.
  - Mount points for a kernel's `extra_ro_binds` are made (empty, root-owned) in the zygote's
    root tmpfs, so later kernels of that zygote see those empty directories (never the content).
  - The zygote runs as root with SYS_ADMIN/SETUID/SETGID/SETPCAP/NET_ADMIN in the host's user
    namespace (no code from a kernel ever runs in it; kernels cannot see or signal it).

Forking a *running* kernel at a state is not an os.fork: its process has threads and a zmq
context and holds no privilege any more, so a fork of it could not leave the parent's mount, PID
and network namespaces (its /workspace would be shared, not copied). `kernel.fork(n)`
(`workbench.kernel.fork`) copies the state instead: the parent writes its namespace and /workspace
into a snapshot file, and n fresh kernels, each isolated as above (forked from this zygote, or
exec'd), map it copy-on-write. Every property in the table holds for those children because they
are ordinary kernels; what the copy leaves out is listed there.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

from workbench.errors import SandboxError
from workbench.kernel._process import ipykernel_args
from workbench.sandbox import INSIDE_RUN, KernelDir, SandboxProfile, check_sandbox
from workbench.sandbox.isolate import clone_mount
from workbench.sandbox.plan import IsolationPlan, profile_plan
from workbench.sandbox.zygote import ZygoteRequest, request_fds, zygote_argv, zygote_request

_log = logging.getLogger(__name__)
_START_TIMEOUT_S = 120.0


def zygote_unsupported() -> str | None:
    """Why zygote kernels cannot run here, or None when they can."""
    if os.geteuid() != 0:
        return "zygote kernels need root (a per-kernel uid and mounts without a user namespace)"
    try:
        check_sandbox()
    except SandboxError as exc:
        return str(exc)
    return None


class ZygoteChild:
    """A forked kernel as the host sees it: its outer process (pid, pidfd) and exit status."""

    def __init__(self, pid: int, pidfd: int, status_fd: int) -> None:
        self.pid, self.pidfd, self._status_fd = pid, pidfd, status_fd
        self.returncode: int | None = None

    def wait(self) -> int:
        """The exit status (blocks until the outer process has exited); -9 if it was killed."""
        if self.returncode is None:
            chunks = []
            while chunk := os.read(self._status_fd, 64):
                chunks.append(chunk)
            os.close(self._status_fd)
            text = b"".join(chunks).decode() or "-9"
            self.returncode = int(text)
        return self.returncode

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError, OSError):
            signal.pidfd_send_signal(self.pidfd, signal.SIGKILL)


class Zygote:
    """One zygote process for one profile (`zygote_for` keeps one per profile per process)."""

    def __init__(self, profile: SandboxProfile) -> None:
        self.profile = profile
        self._broken = False
        self._lock = threading.Lock()
        self._control, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self._stderr = tempfile.TemporaryFile()
        args = json.dumps(ipykernel_args(f"{INSIDE_RUN}/kernel.json"))  # what async_kernel asks of every child
        argv = [sys.executable, "-m", "workbench.kernel.zygote_main", str(theirs.fileno()), args, *profile.preload]
        started: list[subprocess.Popen[bytes] | BaseException] = []
        ready = threading.Event()
        # bwrap's --die-with-parent is tied to the thread that forks it: a thread that lives as long as
        # the zygote does it (an executor thread could exit and take the zygote with it).
        thread = threading.Thread(
            target=self._run, args=(zygote_argv(profile_plan(profile), argv), theirs, started, ready), daemon=True
        )
        thread.start()
        ready.wait()
        theirs.close()
        if isinstance(started[0], BaseException):
            raise SandboxError(f"the zygote could not start: {started[0]}")
        self.proc = started[0]
        self._handshake()

    def _run(
        self,
        argv: list[str],
        theirs: socket.socket,
        started: list[subprocess.Popen[bytes] | BaseException],
        ready: threading.Event,
    ) -> None:
        try:
            proc = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=self._stderr,
                stderr=self._stderr,
                pass_fds=(theirs.fileno(),),
                start_new_session=True,
            )
        except OSError as exc:
            started.append(exc)
            ready.set()
            return
        started.append(proc)
        ready.set()
        proc.wait()

    def _handshake(self) -> None:
        self._control.settimeout(_START_TIMEOUT_S)
        try:
            hello = self._control.recv(4096)
        except (TimeoutError, OSError) as exc:
            hello = str(exc).encode()
        self._control.settimeout(None)
        self.pid = int(hello.split()[1]) if hello.startswith(b"ready ") else -1  # the zygote's own pid
        if not hello.startswith(b"ready "):
            tail = self.stderr_tail()
            self.close()
            raise SandboxError(f"the zygote did not start ({hello.decode(errors='replace')}): {tail}")

    @property
    def alive(self) -> bool:
        return not self._broken and self.proc.poll() is None

    def stderr_tail(self) -> str:
        self._stderr.seek(0)
        return self._stderr.read()[-1500:].decode(errors="replace").strip()

    def spawn(self, request: ZygoteRequest, fds: list[int]) -> tuple[int, int]:
        """Send one spawn request; return the child's (pid, pidfd). Blocks for one fork."""
        with self._lock:
            try:
                socket.send_fds(self._control, [request.encode()], fds)
                msg, got, _, _ = socket.recv_fds(self._control, 4096, 1)
            except OSError:
                msg, got = b"", []
        if not msg or not got:
            self._broken = True
            for fd in got:
                os.close(fd)
            raise SandboxError(f"the zygote for profile {self.profile.name!r} died: {self.stderr_tail()}")
        return json.loads(msg)["pid"], got[0]

    def close(self) -> None:
        """Kill the zygote (its children die with it) and close its socket."""
        with contextlib.suppress(ProcessLookupError):
            self.proc.kill()
        self.proc.wait()
        self._control.close()
        self._stderr.close()


_ZYGOTES: dict[str, Zygote] = {}
_ZYGOTES_LOCK = threading.Lock()


def _forget_inherited() -> None:
    """In a child of a forked host: the parent's zygotes are the parent's (their sockets too)."""
    global _ZYGOTES_LOCK
    _ZYGOTES.clear()
    _ZYGOTES_LOCK = threading.Lock()  # another thread may have held it at the fork


os.register_at_fork(after_in_child=_forget_inherited)


def zygote_for(profile: SandboxProfile) -> Zygote:
    """The live zygote of `profile`, started (or restarted after a death) on demand."""
    key = json.dumps(dataclasses.asdict(profile), sort_keys=True, default=str)
    with _ZYGOTES_LOCK:
        zygote = _ZYGOTES.get(key)
        if zygote is not None and not zygote.alive:
            _log.info("the zygote of profile %r died; starting a new one", profile.name)
            zygote.close()
            zygote = None
        if zygote is None:
            zygote = _ZYGOTES[key] = Zygote(profile)
        return zygote


def fork_kernel(
    kernel_dir: KernelDir,
    profile: SandboxProfile,
    plan: IsolationPlan,
    *,
    kernel_args: list[str],
) -> ZygoteChild:
    """Fork one kernel sandboxed as `plan` says from `profile`'s zygote; its output goes to `kernel.log`."""
    request = zygote_request(plan, kernel_args)
    status_r, status_w = os.pipe2(os.O_CLOEXEC)
    (_, run), *rest = request_fds(plan)
    log = kernel_dir.path / "kernel.log"
    fds = [status_w]  # the child reads: the run dir's mount, kernel.log, the status pipe, then the rest
    try:
        fds.insert(0, clone_mount(str(run)))
        fds.insert(1, os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600))
        for kind, path in rest:  # each cgroup.procs, then each bind's mount
            fds.append(
                clone_mount(str(path), recursive=True) if kind == "mount" else os.open(path, os.O_WRONLY | os.O_CLOEXEC)
            )
        pid, pidfd = _spawn_retrying(profile, request, fds)
    except BaseException:
        os.close(status_r)
        raise
    finally:
        for fd in fds:
            os.close(fd)
    return ZygoteChild(pid, pidfd, status_r)


def _spawn_retrying(profile: SandboxProfile, request: ZygoteRequest, fds: list[int]) -> tuple[int, int]:
    """Spawn; if the zygote turns out dead (killed since its last use), start a new one once."""
    try:
        return zygote_for(profile).spawn(request, fds)
    except (SandboxError, OSError):
        time.sleep(0.01)
        return zygote_for(profile).spawn(request, fds)


def close_zygotes() -> None:
    """Kill every zygote of this process (tests; process exit does it anyway)."""
    with _ZYGOTES_LOCK:
        for zygote in _ZYGOTES.values():
            zygote.close()
        _ZYGOTES.clear()


def zygote_pids() -> list[int]:
    """Host pids of this process's live zygotes (the forking processes, inside their bwrap)."""
    with _ZYGOTES_LOCK:
        return [z.pid for z in _ZYGOTES.values() if z.alive]

"""`AsyncKernel`: one sandboxed ipykernel for one rollout (the library's core).

    async with AsyncKernel(profile="default", output_cap=8000) as k:
        obs = await k.execute("import math; math.pi", timeout=30)
        print(obs.text)          # 3.141592653589793

The kernel runs `ipykernel_launcher` inside bubblewrap (see `workbench.sandbox`) and talks over
zmq ipc sockets in `<kernel_dir>/run/` (inside: /run/workbench). A pidfd on the sandbox's
outermost process resolves `died` the moment the sandbox ends, so execute() never hangs on a
dead kernel. With `start="zygote"` (the default where the machine supports it) the same sandbox
is forked from the profile's zygote instead of exec'd (see `workbench.kernel.zygote`). A timeout
interrupts (control-channel `interrupt_request`); if the code does not stop within
`interrupt_grace` seconds the whole sandbox is killed. `await k.fork(n)` copies the kernel's
namespace and /workspace into n new kernels (see `workbench.kernel.fork`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import secrets
import subprocess
import time
import warnings
from pathlib import Path
from typing import Literal, Protocol

from workbench.errors import KernelDiedError, KernelError, SandboxError
from workbench.kernel._channels import Channels, execute_content
from workbench.kernel._process import (
    all_gone,
    all_or_death,
    ipykernel_args,
    kernel_argv,
    kill_quietly,
    pidfds,
    write_connection_file,
)
from workbench.kernel.fork import ForkResult, fork
from workbench.kernel.observation import Observation, OutputCollector
from workbench.kernel.procs import process_tree
from workbench.kernel.zygote import fork_kernel, zygote_for, zygote_unsupported
from workbench.sandbox import (
    INSIDE_RUN,
    KernelDir,
    SandboxProfile,
    UidLease,
    check_sandbox,
    default_root,
    load_profile,
)
from workbench.sandbox.cgroups import Cgroup
from workbench.sandbox.plan import IsolationPlan, plan_for

StartMethod = Literal["zygote", "exec"]
_log = logging.getLogger(__name__)
_told_exec: set[str] = set()


class KernelProcess(Protocol):
    """The host's handle on a kernel's outermost process (a `Popen`, or a zygote's child)."""

    pid: int
    returncode: int | None

    def wait(self) -> int: ...
    def kill(self) -> None: ...


def start_method(start: StartMethod | None, isolation: str) -> StartMethod:
    """`start`, or the default: zygote where the machine supports it, else exec (reason logged)."""
    if start not in (None, "zygote", "exec"):
        raise SandboxError(f"start must be 'zygote' or 'exec', got {start!r}")
    if isolation != "bwrap" or start == "exec":
        return "exec"
    reason = zygote_unsupported()
    if reason is None:
        return "zygote"
    if start == "zygote":
        raise SandboxError(f"start='zygote' is not possible here: {reason}; pass start='exec'")
    if reason not in _told_exec:
        _told_exec.add(reason)
        _log.warning("kernels start with exec, not from a zygote: %s", reason)
    return "exec"


class AsyncKernel:
    """A sandboxed Jupyter kernel. Start it, execute code, close it; never reuse across rollouts."""

    def __init__(
        self,
        profile: str | os.PathLike[str] | SandboxProfile = "default",
        *,
        isolation: Literal["bwrap", "none"] = "bwrap",
        root: Path | str | None = None,
        output_cap: int = 20_000,
        env: dict[str, str] | None = None,
        startup_code: str | None = None,
        extra_ro_binds: tuple[str, ...] | list[str] = (),
        startup_timeout: float = 60.0,
        interrupt_grace: float = 3.0,
        keep_dir: bool = False,
        start: StartMethod | None = None,
    ) -> None:
        if isolation not in ("bwrap", "none"):
            raise SandboxError(f"isolation must be 'bwrap' or 'none', got {isolation!r}")
        self.start_method = start_method(start, isolation)
        self._start_chosen = start is not None
        self.profile = load_profile(profile)
        self.isolation = isolation
        self.root = Path(root) if root is not None else default_root()
        self.output_cap = int(output_cap)
        self.env = {str(k): str(v) for k, v in (env or {}).items()}
        self.startup_code = startup_code
        self.extra_ro_binds = tuple(extra_ro_binds)
        self.startup_timeout = startup_timeout
        self.interrupt_grace = interrupt_grace
        self.keep_dir = keep_dir
        self._dir: KernelDir | None = None
        self._lease: UidLease | None = None
        self._cgroup: Cgroup | None = None
        self._proc: KernelProcess | None = None
        self._pidfd = -1
        self._died: asyncio.Future[int] | None = None
        self._ch: Channels | None = None
        self._lock = asyncio.Lock()
        self._seq = 0
        self._closed = False

    # -- properties ---------------------------------------------------------------------
    @property
    def kernel_dir(self) -> Path:
        """The kernel's private directory on the host (run/, work/, outputs/, kernel.log)."""
        if self._dir is None:
            raise KernelError("the kernel has not been started; call start() first")
        return self._dir.path

    @property
    def rollout_dir(self) -> Path:
        """Deprecated name of `kernel_dir` (docs/glossary.md: a rollout is something else)."""
        return self.kernel_dir

    @property
    def alive(self) -> bool:
        return self._died is not None and not self._died.done() and not self._closed

    @property
    def pid(self) -> int | None:
        """Host pid of the sandbox's outermost process (killing it ends the whole sandbox)."""
        return self._proc.pid if self._proc else None

    @property
    def uid(self) -> int | None:
        """The unprivileged host uid the kernel runs as (None when not root or unsandboxed)."""
        return self._lease.uid if self._lease else None

    @property
    def died(self) -> asyncio.Future[int]:
        """Resolves with the exit status once the kernel's process is gone."""
        if self._died is None:
            raise KernelError("the kernel has not been started; call start() first")
        return self._died

    def share(self, path: str | os.PathLike[str]) -> None:
        """Make a host-created file in run/ (e.g. gateway.sock) usable by the sandbox uid."""
        if self._dir is not None:
            self._dir.share(path)

    # -- lifecycle ----------------------------------------------------------------------
    async def start(self) -> AsyncKernel:
        if self._proc is not None:
            raise KernelError("this kernel was already started; make a new one per rollout")
        loop = asyncio.get_running_loop()
        sandboxed = self.isolation == "bwrap"
        if sandboxed:
            await asyncio.to_thread(check_sandbox)
            if os.geteuid() == 0:
                self._lease = UidLease()
        else:
            warnings.warn(
                "isolation='none': model code runs UNSANDBOXED with your user's network, files and secrets",
                RuntimeWarning,
                stacklevel=2,
            )
        self._dir = KernelDir.create(self.root, self.uid)
        try:
            if sandboxed:
                self._cgroup = Cgroup.create(self._dir.path.name, self.profile.limits)
            if self.start_method == "zygote" and not await self._zygote_ready():
                self.start_method = "exec"
            host_ip = self._fork() if self.start_method == "zygote" else self._exec(sandboxed)
            self._died = loop.create_future()
            loop.add_reader(self._pidfd, self._on_exit)
            assert self._ch is not None
            self._ch.connect(host_ip)
            await self._wait_ready()
            self._dir.seal()  # its sockets are bound: from now on the kernel creates no host files
            if self.startup_code:
                obs = await self.execute(self.startup_code, timeout=self.startup_timeout, silent=True)
                if not obs.ok:
                    raise KernelError(f"startup_code failed: {obs.text[-2000:]}")
        except BaseException:
            await self.close()
            raise
        return self

    async def _zygote_ready(self) -> bool:
        """Start the profile's zygote if needed. One that cannot start is an error when zygote was
        asked for; by default the kernel is exec'd instead (the reason logged)."""
        try:
            await asyncio.to_thread(zygote_for, self.profile)
        except SandboxError as exc:
            if self._start_chosen:
                raise
            _log.warning("the zygote of profile %r did not start, so this kernel is exec'd: %s", self.profile.name, exc)
            return False
        return True

    def _exec(self, sandboxed: bool) -> str:
        """Start the kernel as a fresh process (bwrap → ipykernel_launcher); return its ipc prefix."""
        assert self._dir is not None
        argv, host_ip = self._command(sandboxed)
        with open(self._dir.path / "kernel.log", "wb") as log:
            self._proc = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                start_new_session=True,
                close_fds=True,
                cwd=None if sandboxed else self._dir.work,
                env=None if sandboxed else self._plain_env(),
            )
        self._pidfd = os.pidfd_open(self._proc.pid)
        return host_ip

    def _fork(self) -> str:
        """Fork the kernel from the profile's zygote; return its ipc prefix."""
        assert self._dir is not None and self._lease is not None
        key = secrets.token_hex(16)
        self._ch = Channels(key)
        host_ip = write_connection_file(self._dir, key)
        kernel_args = ipykernel_args(f"{INSIDE_RUN}/kernel.json")
        child = fork_kernel(self._dir, self.profile, self._plan(), kernel_args=kernel_args)
        self._proc, self._pidfd = child, child.pidfd
        return host_ip

    def _command(self, sandboxed: bool) -> tuple[list[str], str]:
        assert self._dir is not None
        key = secrets.token_hex(16)
        self._ch = Channels(key)
        return kernel_argv(self._dir, key, self._plan() if sandboxed else None)

    def _plan(self) -> IsolationPlan:
        """This kernel's isolation plan (either start method renders it)."""
        assert self._dir is not None
        return plan_for(
            self.profile,
            self._dir.run,
            uid=self.uid,
            env=self.env,
            extra_ro_binds=self.extra_ro_binds,
            cgroup=self._cgroup.dirs if self._cgroup else (),
        )

    def _plain_env(self) -> dict[str, str]:
        assert self._dir is not None
        return {
            **os.environ,
            **self.profile.env,
            **self.env,
            "WORKBENCH_RUN_DIR": str(self._dir.run),
            "WORKBENCH_WORK_DIR": str(self._dir.work),
            "WORKBENCH_GATEWAY": str(self._dir.run / "gateway.sock"),
        }

    async def _wait_ready(self) -> None:
        assert self._died is not None and self._ch is not None and self._ch.welcome is not None
        welcome = self._ch.welcome
        deadline = time.monotonic() + self.startup_timeout
        _, reply, _ = await self._ch.request("shell", "kernel_info_request", {})
        while True:
            pending = [f for f in (reply, welcome) if not f.done()]
            if not pending:
                return
            done, _ = await asyncio.wait(
                [*pending, self._died],
                return_when=asyncio.FIRST_COMPLETED,
                timeout=max(0.0, deadline - time.monotonic()),
            )
            if self._died.done():
                raise KernelError(
                    f"the sandboxed kernel exited during start-up (status {self._died.result()}): {self._log_tail()}"
                )
            if not done:
                raise KernelError(
                    f"the kernel did not answer within {self.startup_timeout:.0f} s; "
                    f"raise startup_timeout or check the log: {self._log_tail()}"
                )
            if reply.done() and not welcome.done():  # old ipykernel: no iopub welcome
                _, reply, _ = await self._ch.request("shell", "kernel_info_request", {})
                await asyncio.sleep(0.01)

    def _log_tail(self) -> str:
        try:
            return (self.kernel_dir / "kernel.log").read_text(errors="replace")[-1500:].strip()
        except OSError:
            return "(no log)"

    def _on_exit(self) -> None:
        loop = asyncio.get_running_loop()
        loop.remove_reader(self._pidfd)
        assert self._proc is not None and self._died is not None
        code = self._proc.wait()
        if not self._died.done():
            self._died.set_result(code)

    def sibling(self) -> AsyncKernel:
        """A new, unstarted kernel with this one's settings (profile, isolation, start method, ...)."""
        return AsyncKernel(
            self.profile,
            isolation=self.isolation,
            root=self.root,
            output_cap=self.output_cap,
            env=self.env,
            startup_code=self.startup_code,
            extra_ro_binds=self.extra_ro_binds,
            startup_timeout=self.startup_timeout,
            interrupt_grace=self.interrupt_grace,
            keep_dir=self.keep_dir,
            start=self.start_method,
        )

    async def fork(self, n: int, *, strict: bool = False, timeout: float = 120.0) -> ForkResult[AsyncKernel]:
        """`n` new started kernels holding copies of this one's namespace and /workspace (a state
        copy into fresh kernels of the same settings; see `workbench.kernel.fork`). Names whose
        values cannot be copied are listed in `.skipped` (and logged); `strict=True` raises instead."""
        if not self.alive:
            raise KernelError("only a running kernel can fork; start() it first")
        return await fork(self, n, strict=strict, timeout=timeout)

    # -- execution ----------------------------------------------------------------------
    async def execute(self, code: str, timeout: float | None = None, *, silent: bool = False) -> Observation:
        """Run `code`; on timeout interrupt, then kill. Death mid-run gives `kernel_died`."""
        if self._died is None or self._closed:
            raise KernelError("the kernel is not running; start() it (or make a new one)")
        if self._died.done():
            raise KernelDiedError(f"the kernel is dead (exit status {self._died.result()}); start a new one")
        async with self._lock:
            return await self._execute(code, timeout, silent)

    async def _execute(self, code: str, timeout: float | None, silent: bool) -> Observation:
        assert self._died is not None and self._dir is not None
        self._seq += 1
        collector = OutputCollector(self.output_cap, self._dir.outputs / f"output-{self._seq}.txt")
        assert self._ch is not None
        t0 = time.perf_counter()
        msg_id, reply, idle = await self._ch.request(
            "shell", "execute_request", execute_content(code, silent), collector
        )
        try:
            done = await all_or_death([reply, idle], self._died, timeout)
            if not done and not self._died.done():
                collector.obs.timed_out = True
                await self.interrupt()
                done = await all_or_death([reply, idle], self._died, self.interrupt_grace)
                if done:
                    collector.obs.interrupted = True
                else:
                    collector.obs.killed = True
                    await self._kill()
            if self._died.done():
                obs = collector.obs
                obs.kernel_died = True
                if obs.error_name is None:
                    status = self._died.result()
                    obs.error_name = "KernelDied"
                    if obs.killed:
                        obs.error_value = "the kernel was killed after the timeout"
                    elif self._cgroup is not None and self._cgroup.oom_killed():
                        obs.error_value = (
                            f"the kernel was killed by the sandbox memory limit "
                            f"(memory_mb={self.profile.limits.memory_mb})"
                        )
                    else:
                        obs.error_value = (
                            f"the kernel process exited (status {status}); it "
                            "may have run out of memory or called os._exit"
                        )
        finally:
            self._ch.forget(msg_id)
        obs = collector.finish(time.perf_counter() - t0)
        if reply.done() and obs.execution_count is None:
            obs.execution_count = reply.result().get("execution_count")
        if obs.timed_out and obs.error_name is None:
            obs.error_name, obs.error_value = "TimeoutError", f"execution exceeded {timeout} s"
        return obs

    async def interrupt(self) -> None:
        """Interrupt the running cell (control-channel message; signals would hit bwrap)."""
        if not self.alive:
            return
        assert self._ch is not None
        _, fut, _ = await self._ch.request("control", "interrupt_request", {})
        await all_or_death([fut], self.died, self.interrupt_grace)

    async def _kill(self) -> None:
        assert self._proc is not None and self._died is not None
        if self._died.done():
            return
        tree = process_tree(self._proc.pid)
        inner = pidfds(tree[1:])
        # Kill the sandbox's pid-1 first: the kernel tears the pid namespace down and the
        # outer bwrap (still alive) reaps it, so nothing is left as a zombie for init.
        sandboxed = self.isolation == "bwrap" and len(tree) > 1
        kill_quietly(tree[1] if sandboxed else self._proc.pid)
        try:
            await asyncio.wait_for(asyncio.shield(self._died), 10)
            await asyncio.wait_for(all_gone(inner), 10)  # the pid namespace is torn down
        except TimeoutError:
            kill_quietly(self._proc.pid)
            self._proc.wait()
        finally:
            for fd in inner:
                os.close(fd)

    async def close(self) -> None:
        """Kill the sandbox, close sockets, remove the rollout dir, free the uid. Idempotent."""
        if self._closed:
            return
        self._closed = True
        if self._proc is not None:
            if self._died is not None and self._pidfd >= 0:
                await self._kill()
            else:
                self._proc.kill()
                self._proc.wait()
        if self._ch is not None:
            self._ch.close()
        if self._pidfd >= 0:
            try:
                asyncio.get_running_loop().remove_reader(self._pidfd)
            except RuntimeError:
                pass
            os.close(self._pidfd)
            self._pidfd = -1
        if self._cgroup is not None:
            await asyncio.to_thread(self._cgroup.remove)
        if self._dir is not None and not self.keep_dir:
            self._dir.remove()
            if self.root == default_root():
                with contextlib.suppress(OSError):
                    self.root.rmdir()  # only when empty: other kernels of this process may live
        if self._lease is not None:
            self._lease.release()

    async def __aenter__(self) -> AsyncKernel:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

"""The floor under a zygote kernel's start: the same ipykernel, forked from the same prepared app,
with no sandbox at all (no bwrap, namespaces, mounts, cgroup, uid change or rollout dir).

    async with UnsandboxedForker() as forker:
        seconds = await forker.all_at_once(64)   # all answering `1+1`, as bench_kernel times zygote kernels

The forker is a subprocess that imports what the zygote imports (`zygote_main.PRELOAD`), runs
`zygote_app.prepare` on the same ipykernel arguments, freezes its heap and then forks one child per
line it reads (a directory holding `kernel.json`); each child runs `zygote_app.run_prepared`. The host
talks to each through `workbench.kernel._channels.Channels`, the client every `AsyncKernel` uses. What
a zygote start costs beyond this floor is the sandbox's share; the floor itself is ipykernel's.
"""

from __future__ import annotations

import asyncio
import gc
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from workbench.kernel._channels import Channels, execute_content
from workbench.kernel._process import connection_info, ipykernel_args
from workbench.kernel.observation import OutputCollector
from workbench.sandbox import load_profile, rollout_base


class UnsandboxedForker:
    """A forker subprocess and the host side of the kernels it forks (see the module docstring)."""

    def __init__(self) -> None:
        self.base = Path(tempfile.mkdtemp(prefix="wb-floor-", dir=rollout_base()))
        self.proc: subprocess.Popen[str] | None = None
        self.seq = 0

    async def __aenter__(self) -> UnsandboxedForker:
        home = self.base / "home"
        home.mkdir()
        env = {**os.environ, "HOME": str(home), "IPYTHONDIR": str(home / ".ipython")}
        env.update(load_profile("default").env)  # thread pools pinned before the imports, as in the zygote
        env["PYDEVD_DISABLE_FILE_VALIDATION"] = "1"  # debugpy's import-time warning (the zygote's goes to its log)
        self.proc = subprocess.Popen(
            [sys.executable, __file__, "--serve"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
            cwd=self.base,
        )
        assert self.proc.stdout is not None
        ready = await asyncio.to_thread(self.proc.stdout.readline)
        if ready.strip() != "ready":
            raise RuntimeError(f"the unsandboxed forker did not start: {ready!r}")
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
        shutil.rmtree(self.base, ignore_errors=True)

    async def start(self) -> tuple[Channels, int]:
        """Fork one kernel; return its channels once it answers kernel_info, and its pid."""
        self.seq += 1
        where = self.base / str(self.seq)
        where.mkdir()
        key = secrets.token_hex(16)
        (where / "kernel.json").write_text(json.dumps(connection_info(str(where / "k"), key)))
        assert self.proc is not None and self.proc.stdin is not None
        self.proc.stdin.write(f"{where}\n")
        self.proc.stdin.flush()
        ch = Channels(key)
        ch.connect(str(where / "k"))
        _, reply, _ = await ch.request("shell", "kernel_info_request", {})
        assert ch.welcome is not None
        await asyncio.wait_for(asyncio.gather(reply, ch.welcome), 60)
        return ch, int((where / "pid").read_text())

    async def ready(self) -> float:
        """Seconds from asking for one kernel to its first `1+1` answered; then it is ended."""
        t = time.perf_counter()
        ch, pid = await self.start()
        await execute(ch)
        took = time.perf_counter() - t
        end(ch, pid)
        return took

    async def all_at_once(self, n: int) -> float:
        """Seconds from asking for n kernels at once to all of them answering `1+1`."""
        t = time.perf_counter()
        started = await asyncio.gather(*(self.start() for _ in range(n)))
        await asyncio.gather(*(execute(ch) for ch, _ in started))
        took = time.perf_counter() - t
        for ch, pid in started:
            end(ch, pid)
        return took


async def execute(ch: Channels) -> None:
    """`1+1` as `AsyncKernel.execute` sends it; its reply and its iopub idle."""
    collector = OutputCollector(20_000, Path(os.devnull))  # 1+1 never spills
    _, reply, idle = await ch.request("shell", "execute_request", execute_content("1+1"), collector)
    await asyncio.wait_for(asyncio.gather(reply, idle), 60)


def end(ch: Channels, pid: int) -> None:
    ch.close()
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def serve() -> None:
    """The forker: prepare the app as the zygote does, then fork a kernel per directory read."""
    from workbench.children import die_with_parent
    from workbench.kernel import zygote_app
    from workbench.kernel.zygote_main import PRELOAD

    for name in PRELOAD:
        __import__(name)
    app = zygote_app.prepare(ipykernel_args("kernel.json"))
    if app is None:
        raise SystemExit("zygote_app.prepare declined the arguments")
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)
    gc.collect()
    gc.freeze()
    print("ready", flush=True)
    for line in sys.stdin:
        if os.fork() == 0:
            die_with_parent()
            os.chdir(line.strip())
            Path("pid").write_text(str(os.getpid()))
            log = os.open("kernel.log", os.O_WRONLY | os.O_CREAT, 0o600)
            devnull = os.open(os.devnull, os.O_RDONLY)
            os.dup2(devnull, 0)
            os.dup2(log, 1)
            os.dup2(log, 2)
            os.closerange(3, 1 << 16)
            sys.argv = ["ipykernel_launcher", *ipykernel_args("kernel.json")]
            zygote_app.run_prepared(app)
            os._exit(0)


if __name__ == "__main__" and sys.argv[1:] == ["--serve"]:
    serve()

"""Zygote kernels: the same isolation as exec'd ones, nothing left behind by any path, and a killed
zygote takes its kernels with it and is rebuilt. Real bwrap, real zygotes, real ipykernels."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from workbench.errors import SandboxError
from workbench.kernel import AsyncKernel, AsyncKernelPool, Kernel
from workbench.kernel.async_kernel import start_method
from workbench.kernel.procs import process_tree
from workbench.kernel.zygote import zygote_for, zygote_pids, zygote_unsupported
from workbench.sandbox import load_profile

pytestmark = pytest.mark.skipif(zygote_unsupported() is not None, reason=f"no zygotes here: {zygote_unsupported()}")

PROBE = """
import ctypes, os, socket
libc = ctypes.CDLL(None, use_errno=True)
userns = 'refused' if libc.unshare(0x10000000) != 0 else 'CREATED'
open('/tmp/mine', 'w').write(str(os.getpid()))
{
    'uid': os.getuid(), 'cwd': os.getcwd(), 'host': socket.gethostname(), 'userns': userns,
    'caps': [l.split()[1] for l in open('/proc/self/status') if l.startswith(('CapEff', 'CapBnd', 'CapPrm'))],
    'pids': sorted(int(p) for p in os.listdir('/proc') if p.isdigit()),
    'tmp': sorted(os.listdir('/tmp')), 'ws': sorted(os.listdir('/workspace')),
    'shm': os.access('/dev/shm', os.W_OK), 'root_w': os.access('/', os.W_OK),
}
"""


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _cgroup_dirs(name: str) -> list[Path]:
    return [p for p in Path("/sys/fs/cgroup").glob(f"*/workbench/{name}-*") if p.is_dir()]


@pytest.mark.parametrize("start", ["zygote", "exec"])
def test_each_start_isolates_alike(tmp_path: Path, start: str):
    with Kernel(root=tmp_path, start=start) as a, Kernel(root=tmp_path, start=start) as b:
        assert a.aio.start_method == start
        a.execute("open('/workspace/a.txt', 'w').write('a'); open('/tmp/a-only', 'w').write('a')")
        seen = [eval(k.execute(PROBE).result) for k in (a, b)]
    for probe, kernel in zip(seen, (a, b), strict=True):
        assert probe["cwd"] == "/workspace" and probe["host"] == "sandbox" and probe["userns"] == "refused"
        assert probe["caps"] == ["0000000000000000"] * 3
        assert probe["uid"] == kernel.uid and kernel.uid != 0
        assert len(probe["pids"]) <= 4  # its own PID namespace: an init, the kernel (and bwraps)
        assert "mine" in probe["tmp"]
        assert not probe["shm"] and not probe["root_w"]
    assert seen[0]["ws"] == ["a.txt"] and seen[1]["ws"] == []  # /workspace and /tmp are per kernel
    assert "a-only" in seen[0]["tmp"] and "a-only" not in seen[1]["tmp"]
    assert seen[0]["uid"] != seen[1]["uid"]


def test_zygote_forks_from_one_thread_and_mounts_stay_in_children(tmp_path: Path):
    with Kernel(root=tmp_path, start="zygote") as k:
        zygote = zygote_for(k.aio.profile)
        status = Path(f"/proc/{zygote.pid}/status").read_text()
        assert "Threads:\t1\n" in status  # no zmq, event loop or pool thread before a fork
        mounts = Path(f"/proc/{zygote.pid}/mountinfo").read_text()
        with Kernel(root=tmp_path, start="zygote", extra_ro_binds=[f"{tmp_path}:/data"]) as other:
            assert other.execute("1 + 1").result == "2"
            assert Path(f"/proc/{zygote.pid}/mountinfo").read_text() == mounts  # nothing propagated back


def test_close_leaves_no_process_cgroup_or_dir(tmp_path: Path):
    k = Kernel(root=tmp_path, start="zygote").start()
    pids, rollout = process_tree(k.pid), k.kernel_dir
    assert len(pids) >= 3 and rollout.is_dir()  # outer, init, kernel
    cgroups = _cgroup_dirs(rollout.name)
    k.close()
    assert not [p for p in pids if _alive(p)]
    assert not rollout.exists() and not [c for c in cgroups if c.exists()]


def test_killed_zygote_takes_its_kernels_and_the_pool_rebuilds_it(tmp_path: Path):
    async def main() -> None:
        async with AsyncKernelPool(2, root=tmp_path, start="zygote") as pool:
            async with pool.acquire() as held:
                kernel_pids = process_tree(held.pid)
                name = held.kernel_dir.name
                old = zygote_for(held.profile).pid
                os.kill(old, signal.SIGKILL)
                assert await asyncio.wait_for(asyncio.shield(held.died), 30) is not None
                deadline = time.monotonic() + 10
                while time.monotonic() < deadline and any(_alive(p) for p in kernel_pids):
                    await asyncio.sleep(0.05)
                assert not [p for p in kernel_pids if _alive(p)]
            async with pool.acquire() as fresh:  # from a new zygote
                assert (await fresh.execute("6 * 7")).result == "42"
                assert zygote_for(fresh.profile).pid != old
                fresh_pids = process_tree(fresh.pid)
        assert not [p for p in fresh_pids if _alive(p)]
        assert not list(tmp_path.iterdir()) and not _cgroup_dirs(name)

    asyncio.run(main())


ORPHAN_SCRIPT = """
import json, sys, time
from workbench.kernel import Kernel
from workbench.kernel.procs import process_tree
from workbench.kernel.zygote import zygote_pids
k = Kernel(root=sys.argv[1], start="zygote").start()
assert k.execute("1+1").result == "2"
print(json.dumps(process_tree(k.pid) + zygote_pids()), flush=True)
time.sleep(120)
"""


def test_host_sigkill_takes_zygote_and_kernels(tmp_path: Path):
    host = subprocess.Popen([sys.executable, "-c", ORPHAN_SCRIPT, str(tmp_path)], stdout=subprocess.PIPE, text=True)
    try:
        assert host.stdout is not None
        pids = json.loads(host.stdout.readline())
        assert len(pids) >= 4 and all(_alive(p) for p in pids)
    finally:
        host.kill()
        host.wait()
        if host.stdout is not None:
            host.stdout.close()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(_alive(p) for p in pids):
        time.sleep(0.05)
    assert not [p for p in pids if _alive(p)]


@pytest.mark.parametrize("start", ["zygote", "exec"])
def test_pool_of_either_start_runs_fresh_kernels(tmp_path: Path, start: str):
    async def main() -> None:
        async with AsyncKernelPool(2, root=tmp_path, start=start) as pool:
            assert pool.start_method == start

            async def rollout(i: int) -> str:
                async with pool.acquire() as k:
                    assert k.start_method == start
                    fresh = await k.execute("'marker' in globals()")
                    await k.execute(f"marker = {i}")
                    return fresh.result

            assert await asyncio.gather(*(rollout(i) for i in range(4))) == ["False"] * 4
        assert not list(tmp_path.iterdir())

    asyncio.run(main())


def test_start_choice_and_its_errors():
    assert start_method(None, "bwrap") == "zygote"
    assert start_method(None, "none") == "exec"  # an unsandboxed kernel is always exec'd
    assert start_method("exec", "bwrap") == "exec"
    with pytest.raises(SandboxError, match="'zygote' or 'exec'"):
        start_method("spawn", "bwrap")  # type: ignore[arg-type]
    assert AsyncKernel(root="/tmp/unused").start_method == "zygote"
    assert set(zygote_pids()) <= {p for p in zygote_pids() if _alive(p)}


def test_profile_preload_is_validated():
    with pytest.raises(Exception, match="preload"):
        load_profile("default").replace(preload=("not a module",))


def test_a_zygote_that_cannot_start_is_an_error_or_an_exec(tmp_path: Path):
    broken = load_profile("default").replace(preload=("no_such_module_for_zygote",))
    with pytest.raises(Exception, match="no_such_module_for_zygote"):
        Kernel(broken, root=tmp_path, start="zygote").start()
    with Kernel(broken, root=tmp_path) as k:  # by default: exec'd instead, the reason logged
        assert k.aio.start_method == "exec" and k.execute("1 + 1").result == "2"
    assert not list(tmp_path.iterdir())

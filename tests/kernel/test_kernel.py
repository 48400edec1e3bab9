"""One sandboxed kernel: isolation, limits, timeouts, death, truncation. Real bwrap, real ipykernel. Every
isolation property (network, host files, environment, writes, uid and capabilities, limits) is tested on both
start methods (`each_start`, `STARTS`)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from kernel_starts import STARTS

from workbench.kernel import Kernel
from workbench.kernel.async_kernel import StartMethod
from workbench.kernel.procs import process_tree
from workbench.sandbox import SandboxProfile, load_profile

ROOT = os.geteuid() == 0
# A 4x3 PNG, base64.
PNG_4x3 = "iVBORw0KGgoAAAANSUhEUgAAAAQAAAADCAIAAAA7ljmRAAAADElEQVR4nGNgIAoAAAAnAAHKRxGqAAAAAElFTkSuQmCC"


def small_profile(**limits: int) -> SandboxProfile:
    return load_profile("default").replace(limits=limits)


def test_execute_basics(kernel: Kernel):
    obs = kernel.execute("print('hi'); import sys; print('err', file=sys.stderr); 6 * 7")
    assert (obs.stdout, obs.stderr, obs.result, obs.ok) == ("hi\n", "err\n", "42", True)
    assert obs.execution_count and obs.duration_s > 0
    bad = kernel.execute("1 / 0")
    assert bad.error_name == "ZeroDivisionError" and not bad.ok
    assert "\x1b[" not in "".join(bad.traceback) and "ZeroDivisionError" in bad.text


def test_rich_display_keeps_images_as_data(kernel: Kernel):
    obs = kernel.execute(
        f"import base64\nfrom IPython.display import Image, display\ndisplay(Image(data=base64.b64decode('{PNG_4x3}')))"
    )
    assert obs.display and "image/png" in obs.display[0]
    assert "[image/png 4x3]" in obs.text and "iVBOR" not in obs.text


def test_cwd_user_and_package(each_start: Kernel):
    obs = each_start.execute("import os, workbench.errors\n(os.getcwd(), os.getuid())")
    assert obs.ok, obs.text
    assert "/workspace" in obs.result
    if ROOT:
        assert f"{each_start.uid})" in obs.result and each_start.uid != 0
    caps = each_start.execute("[l for l in open('/proc/self/status') if l.startswith('CapEff')][0]")
    assert caps.result.strip("'\\n").endswith("0000000000000000")


def test_network_blocked(each_start: Kernel):
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    port = server.getsockname()[1]
    try:
        code = (
            "import socket\nres = []\n"
            f"for addr in [('1.1.1.1', 53), ('8.8.8.8', 443), ('127.0.0.1', {port})]:\n"
            "    try:\n        socket.create_connection(addr, timeout=2); res.append('OPEN')\n"
            "    except OSError as e: res.append(type(e).__name__)\n"
            "try:\n    socket.getaddrinfo('pypi.org', 443); res.append('DNS')\n"
            "except OSError as e: res.append(type(e).__name__)\nres"
        )
        obs = each_start.execute(code, timeout=30)
        assert obs.ok, obs.text
        assert "OPEN" not in obs.result and "DNS" not in obs.result
    finally:
        server.close()


def test_host_secrets_unreadable(each_start: Kernel, tmp_path: Path):
    home_secret = Path.home() / ".wb_test_secret"
    home_secret.write_text("top secret")
    home_secret.chmod(0o600)
    try:
        obs = each_start.execute(
            f"out = []\nfor p in ['{home_secret}', '/data/secret.txt', '/etc/shadow']:\n"
            "    try: out.append(open(p).read())\n"
            "    except OSError as e: out.append(type(e).__name__)\n"
            "out.append(open('/data/public.txt').read())\nout"
        )
        assert obs.ok, obs.text
        assert "top secret" not in obs.result and "root-only" not in obs.result
        assert "hello" in obs.result  # the bound dir itself is readable
    finally:
        home_secret.unlink()


def test_host_environment_absent(each_start: Kernel, host_env_secret: str):
    obs = each_start.execute("import os; dict(os.environ)")
    assert obs.ok
    assert "WB_TEST_HOST_SECRET" not in obs.result and host_env_secret not in obs.result
    assert "'WB_EXTRA': 'yes'" in obs.result
    assert "'WORKBENCH_GATEWAY': '/run/workbench/gateway.sock'" in obs.result


def test_writes_only_in_work_dir(each_start: Kernel):
    obs = each_start.execute(
        "res = {}\nfor p in ['/workspace/ok.txt', '/tmp/t.txt', '/usr/x', '/etc/x', '/x', "
        f"'{sys.prefix}/x', '/data/x', '/run/workbench/../x', '{Path.home()}/x']:\n"
        "    try: open(p, 'w').write('x'); res[p] = 'WROTE'\n"
        "    except OSError as e: res[p] = type(e).__name__\nres"
    )
    assert obs.ok, obs.text
    wrote = {k for k, v in eval(obs.result).items() if v == "WROTE"}
    assert wrote == {"/workspace/ok.txt", "/tmp/t.txt"}
    assert not any(each_start.kernel_dir.rglob("ok.txt"))  # /workspace is the sandbox's own tmpfs
    assert not Path("/tmp/t.txt").exists() or Path("/tmp/t.txt").read_text() != "x"


def test_limits_applied(each_start: Kernel):
    lim = small_profile().limits
    obs = each_start.execute(
        "import resource as r\n[r.getrlimit(x)[0] for x in (r.RLIMIT_AS, r.RLIMIT_NPROC, "
        "r.RLIMIT_CPU, r.RLIMIT_FSIZE, r.RLIMIT_NOFILE)]"
    )
    assert eval(obs.result) == [
        lim.memory_mb << 20,
        lim.processes,
        lim.cpu_seconds,
        lim.file_size_mb << 20,
        lim.open_files,
    ]
    tmp = each_start.execute("import shutil; shutil.disk_usage('/tmp').total")
    assert int(tmp.result) == small_profile().tmp_size_mb << 20


def test_gateway_socket_made_after_start_is_reachable(kernel: Kernel):
    path = kernel.kernel_dir / "run" / "gateway.sock"
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(path))
    server.listen()
    kernel.share(path)  # the gateway hands the socket to the sandbox uid
    got: list[bytes] = []

    def serve() -> None:
        conn, _ = server.accept()
        got.append(conn.recv(100))
        conn.sendall(b"pong")
        conn.close()

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    try:
        obs = kernel.execute(
            "import os, socket\ns = socket.socket(socket.AF_UNIX)\n"
            "s.connect(os.environ['WORKBENCH_GATEWAY']); s.sendall(b'ping'); s.recv(10)",
            timeout=10,
        )
        assert obs.result == "b'pong'", obs.text
        t.join(5)
        assert got == [b"ping"]
    finally:
        server.close()
        path.unlink()


def test_infinite_loop_interrupted_then_usable(kernel: Kernel):
    obs = kernel.execute("while True:\n    pass", timeout=1.0)
    assert obs.timed_out and obs.interrupted and not obs.killed and not obs.kernel_died
    assert obs.error_name == "KeyboardInterrupt"
    assert kernel.execute("21 * 2").result == "42" and kernel.alive


@pytest.mark.parametrize("start", STARTS)
def test_memory_bomb_is_an_error_observation(tmp_path: Path, start: StartMethod):
    with Kernel(small_profile(memory_mb=1024), root=tmp_path, start=start) as k:
        big = k.execute("x = bytearray(8 * 2**30)")
        assert big.error_name == "MemoryError"
        grow = k.execute("a = []\nwhile True:\n    a.append(bytearray(50 * 2**20))", timeout=60)
        assert grow.error_name == "MemoryError" or grow.kernel_died, grow.text
        assert not grow.ok


@pytest.mark.slow
@pytest.mark.skipif(not ROOT, reason="per-sandbox cgroups need root")
@pytest.mark.parametrize("start", STARTS)
def test_sandbox_wide_memory_limit(tmp_path: Path, start: StartMethod):
    profile = small_profile(memory_mb=1024).replace(tmp_size_mb=8, limits={"disk_mb": 16})
    with Kernel(profile, root=tmp_path, start=start) as k:  # the cgroup allows memory_mb + disk_mb
        if k.aio._cgroup is None:
            pytest.skip("no writable cgroup hierarchy here (rlimits only)")
        obs = k.execute(  # three processes, each under its own 1 GiB rlimit, 1.35 GiB together
            "import subprocess, sys\nps = [subprocess.Popen([sys.executable, '-c', "
            "\"b = b'x' * (450 << 20); import time; time.sleep(3)\"]) for _ in range(3)]\n"
            "[p.wait() for p in ps]",
            timeout=60,
        )
        assert obs.ok and "-9" in obs.result, obs.text  # the OOM killer stopped one
        assert k.aio._cgroup.oom_killed() and k.alive


def test_uninterruptible_code_is_killed(tmp_path: Path):
    with Kernel(root=tmp_path, interrupt_grace=1.0) as k:
        obs = k.execute(
            "import signal, time\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nwhile True: time.sleep(0.01)",
            timeout=1.0,
        )
        assert obs.timed_out and obs.killed and obs.kernel_died and not obs.interrupted
        assert not k.alive and "killed" in obs.text
        with pytest.raises(Exception, match="dead"):
            k.execute("1")


def test_os_exit_noticed_within_a_second(tmp_path: Path):
    with Kernel(root=tmp_path) as k:
        obs = k.execute("import os; print('bye', flush=True); os._exit(3)", timeout=30)
        assert obs.kernel_died and obs.duration_s < 1.0 and not k.alive
        assert obs.error_name == "KernelDied"


def test_sigkill_mid_execution_reported(tmp_path: Path):
    with Kernel(root=tmp_path) as k:
        pids = process_tree(k.pid)
        victim = pids[-1]  # the innermost process: the ipykernel itself

        def kill_soon() -> None:
            time.sleep(0.5)
            os.kill(victim, signal.SIGKILL)

        threading.Thread(target=kill_soon, daemon=True).start()
        obs = k.execute("import time; time.sleep(30)", timeout=60)
        assert obs.kernel_died and obs.duration_s < 2.0 and not obs.timed_out


def test_close_leaves_nothing(tmp_path: Path):
    k = Kernel(root=tmp_path).start()
    pids, rollout = process_tree(k.pid), k.kernel_dir
    assert len(pids) >= 2 and rollout.is_dir() and k.rollout_dir == rollout  # (its deprecated name)
    k.close()
    assert not any(os.path.exists(f"/proc/{p}") for p in pids)
    assert not rollout.exists()


def test_default_root_removed_when_last_kernel_closes():
    """In a fresh process (kernels other tests keep open here would hold this process's root)."""
    import subprocess
    import sys

    code = (
        "from workbench.kernel import Kernel\nfrom workbench.sandbox import default_root\n"
        "with Kernel() as k:\n    assert k.kernel_dir.parent == default_root()\n"
        "print(default_root().exists())\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == "False"


def test_isolation_none_warns(tmp_path: Path):
    with pytest.warns(RuntimeWarning, match="UNSANDBOXED"):
        with Kernel(isolation="none", root=tmp_path) as k:
            assert k.execute("1 + 1").result == "2"


ORPHAN_SCRIPT = """
import json, sys, time
from workbench.kernel import Kernel
from workbench.kernel.async_kernel import StartMethod
from workbench.kernel.procs import process_tree
k = Kernel(root=sys.argv[1]).start()
assert k.execute("1+1").result == "2"
print(json.dumps(process_tree(k.pid)), flush=True)
time.sleep(120)
"""


def test_host_sigkill_leaves_no_orphans(tmp_path: Path):
    import json

    host = subprocess.Popen([sys.executable, "-c", ORPHAN_SCRIPT, str(tmp_path)], stdout=subprocess.PIPE, text=True)
    try:
        pids = json.loads(host.stdout.readline())
        assert len(pids) >= 2 and all(os.path.exists(f"/proc/{p}") for p in pids)
    finally:
        host.kill()
        host.wait()
        host.stdout.close()
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and any(_running(p) for p in pids):
        time.sleep(0.05)
    assert not [p for p in pids if _running(p)]  # (init may leave a zombie; nothing runs)


@pytest.mark.slow
@pytest.mark.parametrize("start", STARTS)
def test_fork_bomb_contained(tmp_path: Path, start: StartMethod):
    with Kernel(small_profile(processes=64), root=tmp_path, start=start) as k:
        obs = k.execute(
            "import os, time\nwhile True:\n    try: os.fork()\n    except OSError: time.sleep(0.2)", timeout=4
        )
        assert obs.timed_out
        count = len(process_tree(k.pid))
        assert count <= 64 + 4  # the uid's limit, plus the bwrap processes
        t = time.perf_counter()
        subprocess.run(["true"], check=True)
        assert time.perf_counter() - t < 2.0  # the host still spawns processes
        pids = process_tree(k.pid)
    assert not any(os.path.exists(f"/proc/{p}") for p in pids)


def _rss_mb() -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


@pytest.mark.slow
def test_100mb_print_truncated_and_host_memory_bounded(tmp_path: Path):
    with Kernel(root=tmp_path, output_cap=4000, keep_dir=True) as k:
        peak, before, stop = [0.0], _rss_mb(), threading.Event()

        def sample() -> None:
            while not stop.is_set():
                peak[0] = max(peak[0], _rss_mb())
                time.sleep(0.005)

        threading.Thread(target=sample, daemon=True).start()
        obs = k.execute("for _ in range(100):\n    print('x' * 999_999)", timeout=120)
        big = k.execute("print('y' * 100_000_000)", timeout=120)
        stop.set()
        for o in (obs, big):
            assert o.ok and o.truncated and len(o.text) < 4000 + 400
            assert Path(o.full_output_path).stat().st_size >= 100_000_000
            assert o.full_output_path in o.text
        assert peak[0] - before < 700, f"host RSS grew {peak[0] - before:.0f} MiB"


def _running(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.parametrize("start", STARTS)
def test_networked_profile_shares_host_network(tmp_path: Path, start: StartMethod):
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    try:
        with Kernel("networked", root=tmp_path, start=start) as k:
            obs = k.execute(
                "import socket\nsocket.create_connection(('127.0.0.1', "
                f"{server.getsockname()[1]}), 5).close(); 'connected'",
                timeout=30,
            )
            assert obs.result == "'connected'", obs.text  # weaker, as documented
    finally:
        server.close()

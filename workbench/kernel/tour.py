"""A printed tour of one sandboxed kernel: `python -m workbench.kernel.tour` (or `workbench kernels demo`).

Starts a kernel with the default profile and shows, with real code run inside it, that the
network is unreachable, a root-only host file is unreadable, the host's environment is gone,
limits bind, a runaway loop is interrupted at its timeout, and long output is truncated.
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

from workbench.console import quiet_when_reader_leaves
from workbench.kernel import Kernel

STEPS = [
    (
        "who and where am I?",
        "import os; (os.getuid(), os.getcwd(), open('/etc/hostname').read().strip() "
        "if os.path.exists('/etc/hostname') else os.uname().nodename)",
        10,
    ),
    (
        "network (TCP to 1.1.1.1:53, DNS for pypi.org)",
        "import socket\nout = []\nfor f in (lambda: socket.create_connection(('1.1.1.1', 53), 2),\n"
        "          lambda: socket.getaddrinfo('pypi.org', 443)):\n"
        "    try: f(); out.append('REACHED')\n"
        "    except OSError as e: out.append(f'blocked: {e.__class__.__name__}')\nout",
        10,
    ),
    ("read a root-only secret the host just wrote", "open('{secret}').read()", 10),
    (
        "host environment variable WORKBENCH_DEMO_SECRET",
        "import os; os.environ.get('WORKBENCH_DEMO_SECRET', '(absent)')",
        10,
    ),
    ("write outside the work dir", "open('/usr/evil', 'w')", 10),
    (
        "limits (address space MiB, processes, open files)",
        "import resource as r\n(r.getrlimit(r.RLIMIT_AS)[0] >> 20, r.getrlimit(r.RLIMIT_NPROC)[0], "
        "r.getrlimit(r.RLIMIT_NOFILE)[0])",
        10,
    ),
    ("a memory bomb", "x = bytearray(64 * 2**30)", 10),
    ("an infinite loop with a 1 s timeout", "while True:\n    pass", 1),
    ("still alive afterwards?", "sum(range(10))", 10),
    ("a 200,000-character print (cap 600)", "print('x' * 200_000)", 10),
]


def main() -> int:
    secret_dir = Path(tempfile.mkdtemp(prefix="wb-demo-"))
    secret = secret_dir / "secret.txt"
    secret.write_text("the host's secret")
    secret.chmod(0o600)
    os.environ["WORKBENCH_DEMO_SECRET"] = "hunter2"
    print("workbench sandboxed kernel demo\n" + "=" * 31)
    t = time.perf_counter()
    try:
        with Kernel(output_cap=600, extra_ro_binds=[str(secret_dir)]) as k:
            os.environ.pop("WORKBENCH_DEMO_SECRET", None)
            print(
                f"kernel ready in {time.perf_counter() - t:.2f} s (pid {k.pid}, uid {k.uid}, "
                f"kernel dir {k.kernel_dir})\n"
            )
            for title, code, timeout in STEPS:
                obs = k.execute(code.replace("{secret}", str(secret)), timeout=timeout)
                flags = [
                    n for n in ("timed_out", "interrupted", "killed", "truncated", "kernel_died") if getattr(obs, n)
                ]
                last = obs.text.strip().splitlines()[-1] if obs.text.strip() else ""
                shown = obs.text if obs.truncated else last
                shown = "\n   ".join(line[:90] + ("…" if len(line) > 90 else "") for line in shown.strip().splitlines())
                print(
                    f"-- {title}\n   {shown}"
                    + (f"\n   flags: {', '.join(flags)}" if flags else "")
                    + f"  ({obs.duration_s * 1e3:.0f} ms)\n"
                )
            pid = k.pid
        print(f"closed: sandbox process {pid} gone = {not os.path.exists(f'/proc/{pid}')}")
    finally:
        secret.unlink()
        secret_dir.rmdir()
    return 0


if __name__ == "__main__":
    raise SystemExit(quiet_when_reader_leaves(main))

"""The "workbench (sandboxed)" kernelspec's entry point: a sandboxed kernel behind a zmq relay.

    python -m workbench.kernel.launch -f CONNECTION_FILE [--profile default]

Jupyter hands kernels a TCP connection file, but TCP cannot cross the sandbox's unshared
network namespace. So this process (on the host) binds the ports Jupyter chose and relays
each channel to the sandboxed ipykernel's ipc sockets in its rollout dir: ROUTER↔DEALER for
shell/control/stdin/heartbeat, XPUB↔XSUB for iopub. Messages pass through untouched, signed
with Jupyter's own key. The kernel dies with this process (and this process with Jupyter).
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import secrets
import signal
import subprocess
import sys
import threading
from pathlib import Path

import zmq

from workbench.kernel._process import CHANNELS, kernel_argv
from workbench.kernel.procs import process_tree
from workbench.sandbox import RolloutDir, UidLease, check_sandbox, default_root, load_profile
from workbench.sandbox.cgroups import Cgroup

_PR_SET_PDEATHSIG = 1
_PAIRS = {"shell": (zmq.ROUTER, zmq.DEALER), "control": (zmq.ROUTER, zmq.DEALER),
          "stdin": (zmq.ROUTER, zmq.DEALER), "hb": (zmq.ROUTER, zmq.DEALER),
          "iopub": (zmq.XPUB, zmq.XSUB)}


def _die_with_parent() -> None:
    try:
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def _address(info: dict, channel: str) -> str:
    port = info[f"{channel}_port"]
    if info.get("transport", "tcp") == "ipc":
        return f"ipc://{info['ip']}-{port}"
    return f"tcp://{info['ip']}:{port}"


def relay(ctx: zmq.Context, info: dict, host_ip: str) -> None:
    """Bind Jupyter's addresses and relay every channel to the kernel's ipc sockets."""
    ident = secrets.token_bytes(8)  # one identity for shell and stdin, as input_request needs
    for channel, (front_kind, back_kind) in _PAIRS.items():
        front, back = ctx.socket(front_kind), ctx.socket(back_kind)
        if front_kind == zmq.XPUB:
            front.setsockopt(zmq.XPUB_VERBOSE, 1)  # pass every (re)subscription to the kernel
        else:
            back.setsockopt(zmq.IDENTITY, ident)
        for sock in (front, back):
            sock.setsockopt(zmq.LINGER, 0)
        back.setsockopt(zmq.RECONNECT_IVL, 5)
        front.bind(_address(info, channel))
        back.connect(f"ipc://{host_ip}-{CHANNELS[channel]}")
        threading.Thread(target=_proxy, args=(front, back), name=f"relay-{channel}",
                         daemon=True).start()


def _proxy(front: zmq.Socket, back: zmq.Socket) -> None:
    try:
        zmq.proxy(front, back)
    except zmq.ZMQError:
        pass  # context terminated at exit


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m workbench.kernel.launch", description=__doc__.split("\n")[0])
    ap.add_argument("-f", dest="connection_file", required=True, help="Jupyter's connection file")
    ap.add_argument("--profile", default="default", help="sandbox profile name or .toml path")
    ap.add_argument("--root", type=Path, default=None, help="where rollout dirs go")
    args = ap.parse_args(argv)
    _die_with_parent()
    info = json.loads(Path(args.connection_file).read_text())
    profile = load_profile(args.profile)
    check_sandbox()
    lease = UidLease() if os.geteuid() == 0 else None
    rollout = RolloutDir.create(args.root or default_root(), lease.uid if lease else None)
    proc: subprocess.Popen[bytes] | None = None
    cgroup = Cgroup.create(rollout.path.name, profile.limits)
    try:
        cmd, host_ip = kernel_argv(rollout, info["key"], profile, uid=lease.uid if lease else None,
                                   env={}, signature_scheme=info.get("signature_scheme", "hmac-sha256"))
        cmd = cgroup.wrap(cmd) if cgroup else cmd
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, start_new_session=True)

        def stop(*_: object) -> None:
            for pid in process_tree(proc.pid)[1:2] or [proc.pid]:  # the sandbox's pid 1 first
                os.kill(pid, signal.SIGKILL)

        signal.signal(signal.SIGTERM, stop)
        signal.signal(signal.SIGHUP, stop)
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # interrupts arrive as messages
        ctx = zmq.Context()
        relay(ctx, info, host_ip)
        return proc.wait()
    finally:
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait()
        rollout.remove()
        if cgroup is not None:
            cgroup.remove()
        if lease is not None:
            lease.release()


if __name__ == "__main__":
    sys.exit(main())

"""The "workbench (sandboxed)" kernelspec's entry point: a sandboxed kernel behind a zmq relay.

    python -m workbench.kernel.launch -f CONNECTION_FILE [--profile default]

Jupyter hands kernels a TCP connection file, but TCP cannot cross the sandbox's unshared
network namespace. So this process (on the host) binds the ports Jupyter chose and relays
each channel to the sandboxed ipykernel's ipc sockets in its kernel dir: ROUTER↔DEALER for
shell/control/stdin/heartbeat, XPUB↔XSUB for iopub. Messages pass through untouched, signed
with Jupyter's own key. The host-facing sockets take ipykernel's own options (ROUTER_HANDOVER,
linger, CurveZMQ keys when Jupyter provisions them), so clients cannot tell the relay from
ipykernel. The kernel dies with this process (and this process with Jupyter).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import secrets
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import zmq

from workbench.children import die_with_parent
from workbench.kernel._process import CHANNELS, kernel_argv
from workbench.kernel.procs import process_tree
from workbench.sandbox import KernelDir, UidLease, check_sandbox, default_root, load_profile, plan_for
from workbench.sandbox.cgroups import Cgroup

_PAIRS = {
    "shell": (zmq.ROUTER, zmq.DEALER),
    "control": (zmq.ROUTER, zmq.DEALER),
    "stdin": (zmq.ROUTER, zmq.DEALER),
    "hb": (zmq.ROUTER, zmq.DEALER),
    "iopub": (zmq.XPUB, zmq.XSUB),
}
_HANDOVER = ("shell", "control", "stdin")  # as ipykernel: a client reconnecting with its old
#                                            session id takes its identity over from the old socket
_LINGER_MS = 1000  # ipykernel's: what the kernel said last still reaches the clients
_DRAIN_S = 0.05  # after the kernel exits: its last messages still pass the relay


def _address(info: dict[str, Any], channel: str) -> str:
    port = info[f"{channel}_port"]
    if info.get("transport", "tcp") == "ipc":
        return f"ipc://{info['ip']}-{port}"
    return f"tcp://{info['ip']}:{port}"


def _curve_keys(info: dict[str, Any]) -> tuple[bytes, bytes] | None:
    """The CurveZMQ server keypair Jupyter put in the connection file, if any (Z85 text)."""
    pub, sec = info.get("curve_publickey"), info.get("curve_secretkey")
    if not pub or not sec:
        return None
    return (pub.encode("ascii") if isinstance(pub, str) else pub, sec.encode("ascii") if isinstance(sec, str) else sec)


class Relay:
    """Jupyter's five addresses bound on the host, each proxied to the kernel's ipc socket."""

    def __init__(self, info: dict[str, Any], host_ip: str) -> None:
        self.ctx = zmq.Context()
        self._controls: list[zmq.Socket[bytes]] = []
        self._threads: list[threading.Thread] = []
        ident = secrets.token_bytes(8)  # one identity for shell and stdin, as input_request needs
        curve = _curve_keys(info)
        try:
            for channel, (front_kind, back_kind) in _PAIRS.items():
                front, back = self.ctx.socket(front_kind), self.ctx.socket(back_kind)
                front.linger, back.linger = _LINGER_MS, 0
                if front_kind == zmq.XPUB:
                    front.setsockopt(zmq.XPUB_VERBOSE, 1)  # pass every (re)subscription on
                else:
                    back.setsockopt(zmq.IDENTITY, ident)
                if channel in _HANDOVER:
                    front.setsockopt(zmq.ROUTER_HANDOVER, 1)
                if curve is not None:
                    front.curve_publickey, front.curve_secretkey = curve
                    front.curve_server = True
                back.setsockopt(zmq.RECONNECT_IVL, 5)
                front.bind(_address(info, channel))
                back.connect(f"ipc://{host_ip}-{CHANNELS[channel]}")
                ctl_addr = f"inproc://relay-{channel}"
                control = self.ctx.socket(zmq.PAIR)
                control.bind(ctl_addr)
                peer = self.ctx.socket(zmq.PAIR)
                peer.connect(ctl_addr)
                self._controls.append(control)
                self._threads.append(
                    threading.Thread(target=_proxy, args=(front, back, peer), name=f"relay-{channel}", daemon=True)
                )
        except BaseException:
            self.ctx.destroy(linger=0)
            raise
        for t in self._threads:
            t.start()

    def close(self, drain: float = _DRAIN_S) -> None:
        """Let in-flight messages through (`drain` s), stop the proxies, flush to clients."""
        time.sleep(drain)
        for control in self._controls:
            control.send(b"TERMINATE")
        for t in self._threads:
            t.join(timeout=2)
        if any(t.is_alive() for t in self._threads):
            return  # a proxy is stuck: leave its sockets to process exit
        self.ctx.destroy()  # closes every socket, each waiting ≤ its linger to flush


def _proxy(front: zmq.Socket[bytes], back: zmq.Socket[bytes], control: zmq.Socket[bytes]) -> None:
    with contextlib.suppress(zmq.ZMQError):  # context terminated at exit
        zmq.proxy_steerable(front, back, None, control)


def _wait_for_sockets(proc: subprocess.Popen[bytes], host_ip: str, timeout: float = 120) -> bool:
    """Wait until the kernel has bound all its ipc sockets (False if it exits first)."""
    paths = [Path(f"{host_ip}-{n}") for n in CHANNELS.values()]
    deadline = time.monotonic() + timeout
    while proc.poll() is None and time.monotonic() < deadline:
        if all(p.exists() for p in paths):
            return True
        time.sleep(0.02)
    return False


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m workbench.kernel.launch", description=__doc__.split("\n")[0])
    ap.add_argument("-f", dest="connection_file", required=True, help="Jupyter's connection file")
    ap.add_argument("--profile", default="default", help="sandbox profile name or .toml path")
    ap.add_argument("--root", type=Path, default=None, help="where kernel dirs go")
    args = ap.parse_args(argv)
    die_with_parent()
    info = json.loads(Path(args.connection_file).read_text())
    profile = load_profile(args.profile)
    check_sandbox()
    root = args.root or default_root()
    lease = UidLease() if os.geteuid() == 0 else None
    kernel_dir = KernelDir.create(root, lease.uid if lease else None)
    proc: subprocess.Popen[bytes] | None = None
    relay: Relay | None = None
    cgroup = Cgroup.create(kernel_dir.path.name, profile.limits)
    try:
        plan = plan_for(profile, kernel_dir.run, uid=lease.uid if lease else None, cgroup=cgroup.dirs if cgroup else ())
        scheme = info.get("signature_scheme", "hmac-sha256")
        cmd, host_ip = kernel_argv(kernel_dir, info["key"], plan, signature_scheme=scheme, history=True)
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, start_new_session=True)

        def stop(*_: object) -> None:
            for pid in process_tree(proc.pid)[1:2] or [proc.pid]:  # the sandbox's pid 1 first
                os.kill(pid, signal.SIGKILL)

        signal.signal(signal.SIGTERM, stop)
        signal.signal(signal.SIGHUP, stop)
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # interrupts arrive as messages
        relay = Relay(info, host_ip)
        if _wait_for_sockets(proc, host_ip):
            kernel_dir.seal()  # its sockets are bound: from now on the kernel creates no host files
        return proc.wait()
    finally:
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait()
        if relay is not None:
            relay.close()
        kernel_dir.remove()
        if args.root is None:
            with contextlib.suppress(OSError):
                root.rmdir()  # this process's own root: gone with it
        if cgroup is not None:
            cgroup.remove()
        if lease is not None:
            lease.release()


if __name__ == "__main__":
    sys.exit(main())

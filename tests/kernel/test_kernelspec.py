"""The installed "workbench (sandboxed)" kernelspec, started the way JupyterLab starts it."""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import pytest
from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import KernelManager

from workbench.cli import kernel as cli
from workbench.kernel.procs import process_tree


def _run(kc, code: str, timeout: float = 30) -> dict:
    """Execute and collect stdout / result / error, like a notebook frontend."""
    out: dict = {"stdout": ""}

    def hook(msg: dict) -> None:
        t, c = msg["msg_type"], msg["content"]
        if t == "stream":
            out["stdout"] += c["text"]
        elif t == "execute_result":
            out["result"] = c["data"]["text/plain"]
        elif t == "error":
            out["error"] = c["ename"]

    kc.execute_interactive(code, timeout=timeout, output_hook=hook)
    return out


def test_install_via_cli_and_run_sandboxed(tmp_path: Path):
    parser = argparse.ArgumentParser()
    cli.register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["kernels", "install", "--prefix", str(tmp_path)])
    assert args.func(args) == 0
    kdir = tmp_path / "share" / "jupyter" / "kernels" / cli.KERNEL_NAME
    spec = json.loads((kdir / "kernel.json").read_text())
    assert spec["display_name"] == "workbench (sandboxed)" and spec["interrupt_mode"] == "message"
    assert os.path.isabs(spec["argv"][0])

    ksm = KernelSpecManager(kernel_dirs=[str(kdir.parent)])
    km = KernelManager(kernel_name=cli.KERNEL_NAME, kernel_spec_manager=ksm)  # TCP, as Jupyter does
    km.start_kernel()
    kc = km.blocking_client()
    kc.start_channels()
    try:
        kc.wait_for_ready(timeout=60)
        r = _run(
            kc,
            "import os, socket\nprint(os.getcwd())\ntry:\n"
            "    socket.create_connection(('1.1.1.1', 53), 2); res = 'OPEN'\n"
            "except OSError as e:\n    res = type(e).__name__\nres",
        )
        assert r["stdout"].strip() == "/workspace" and r["result"] != "'OPEN'"
        t = time.perf_counter()
        # stop_on_error=False: ipykernel 7 otherwise aborts requests that race its "stop aborting"
        # message after the KeyboardInterrupt, and the next cell could come back 'aborted'
        kc.execute("import time; time.sleep(30)", stop_on_error=False)
        time.sleep(0.5)
        km.interrupt_kernel()  # message mode through the relay
        reply = kc.get_shell_msg(timeout=10)
        assert reply["content"]["status"] == "error" and time.perf_counter() - t < 10
        after = _run(kc, "6 * 7")
        assert after.get("result") == "42", after
        pids = process_tree(km.provisioner.pid)
        assert len(pids) >= 3
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=False)
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and any(os.path.exists(f"/proc/{p}") for p in pids):
        time.sleep(0.05)
    assert not [p for p in pids if os.path.exists(f"/proc/{p}")]


def test_bad_profile_fails_at_install(tmp_path: Path):
    from workbench.errors import ConfigError

    with pytest.raises(ConfigError):
        cli.install_kernelspec(prefix=str(tmp_path), profile="no-such-profile")

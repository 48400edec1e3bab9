"""The app a zygote half-builds: a forked kernel's shell, environment and profile are those of an
exec'd one; the split follows the installed ipykernel; other arguments get ipykernel's whole start."""

from __future__ import annotations

import ast
import inspect
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from ipykernel.kernelapp import IPKernelApp

from workbench.kernel import Kernel, async_kernel
from workbench.kernel import zygote_app as zygote_app_module
from workbench.kernel._process import ipykernel_args
from workbench.kernel.zygote import zygote_unsupported

needs_zygotes = pytest.mark.skipif(zygote_unsupported() is not None, reason=f"no zygotes: {zygote_unsupported()}")

SHELL_PROBE = """
import os
ip = get_ipython()
prof = ip.profile_dir
{
    'kernel': ip.kernel is not None and ip.parent is ip.kernel and ip.kernel.shell is ip,
    'env': {k: os.environ.get(k) for k in ('TERM', 'PAGER', 'GIT_PAGER', 'CLICOLOR', 'WB_EXTRA')},
    'profile': (prof.location, os.path.isdir(prof.startup_dir), os.stat(prof.location).st_uid == os.getuid()),
    'history': ip.history_manager.enabled,
    'magics': sorted(ip.magics_manager.lsmagic()['line'])[:5],
    'hidden': sorted(k for k in ip.user_ns_hidden if not k.startswith('_')),
    'argv': __import__('sys').argv[1:],
    'excepthook': getattr(__import__('sys').excepthook, '__qualname__', None),
}
"""


def _initialize_steps() -> list[str]:
    """The `self.<step>()` calls of IPKernelApp.initialize after `super().initialize(argv)`, in order."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(IPKernelApp.initialize)))
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)]
    names = [c.func.attr for c in sorted(calls, key=lambda c: (c.lineno, c.col_offset))]
    owned = [c.func.attr for c in calls if isinstance(c.func.value, ast.Name) and c.func.value.id == "self"]
    return [n for n in names if n in owned and n != "initialize"]


def test_the_child_runs_ipykernels_remaining_steps_in_its_order():
    assert [*zygote_app_module._CHILD_STEPS, *zygote_app_module._SHELL_STEPS] == _initialize_steps()


def _prepare_in_a_fresh_interpreter(args: list[str]) -> dict[str, object]:
    code = (
        "import json, sys, threading\n"
        "from workbench.kernel.zygote_app import prepare\n"
        "app = prepare(json.loads(sys.argv[1]))\n"
        "print(json.dumps({'prepared': app is not None, 'threads': threading.active_count()}))\n"
    )
    out = subprocess.run([sys.executable, "-c", code, json.dumps(args)], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.splitlines()[-1])


def test_prepare_starts_no_thread_and_refuses_history_on(tmp_path: Path):
    kernel_file = str(tmp_path / "kernel.json")
    assert _prepare_in_a_fresh_interpreter(ipykernel_args(kernel_file)) == {"prepared": True, "threads": 1}
    with_history = ipykernel_args(kernel_file, history=True)
    assert _prepare_in_a_fresh_interpreter(with_history) == {"prepared": False, "threads": 1}


@needs_zygotes
def test_a_forked_kernels_shell_is_an_exec_kernels(tmp_path: Path):
    seen = {}
    for start in ("zygote", "exec"):
        with Kernel(root=tmp_path, start=start, env={"WB_EXTRA": "yes"}) as k:
            seen[start] = eval(k.execute(SHELL_PROBE).result)
            k.execute("def f():\n    return 1 / 0")
            error = k.execute("f()")
            assert not error.ok and "ZeroDivisionError" in error.text and "f()" in error.text
            assert k.execute("%who_ls").result == "['f', 'ip', 'os', 'prof']"
    assert seen["zygote"]["kernel"] and seen["zygote"]["profile"][1:] == (True, True)
    assert seen["zygote"]["env"]["PAGER"] == "cat" and seen["zygote"]["env"]["WB_EXTRA"] == "yes"
    assert seen["zygote"] == seen["exec"]


@needs_zygotes
def test_a_request_with_other_arguments_gets_ipykernels_whole_start(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(async_kernel, "ipykernel_args", lambda f: ipykernel_args(f, history=True))
    with Kernel(root=tmp_path, start="zygote") as k:
        assert k.execute("get_ipython().history_manager.enabled").result == "True"
        assert k.execute("get_ipython().kernel.shell is get_ipython()").result == "True"

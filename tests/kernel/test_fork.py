"""`kernel.fork(n)`: a state copy into n fresh kernels. Every child holds the parent's names,
functions, classes, imports, notepad and /workspace; what one child changes no other kernel sees;
what cannot be copied is reported; nothing is left behind. Real bwrap, real ipykernels."""

from __future__ import annotations

import ast
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from workbench.errors import KernelError
from workbench.kernel import Kernel
from workbench.kernel.procs import process_tree
from workbench.kernel.zygote import zygote_unsupported

pytestmark = pytest.mark.skipif(zygote_unsupported() is not None, reason=f"needs root: {zygote_unsupported()}")

PARENT_STATE = """
import json, collections
import workbench.runtime
workbench.runtime.install(globals(), [], push_notepad=False)
notepad.add_fact("fact before the fork")
y = 5
shared = [1, 2]
also_shared = shared
def f():
    return y * 2
def cells():
    return get_ipython().user_ns is globals()
class C:
    def g(self):
        return f() + 1
counter = collections.Counter("abca")
open('/workspace/data.txt', 'w').write('from the parent')
os_name = json.__name__
"""


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _value(k: Kernel, expr: str) -> object:
    obs = k.execute(f"print(repr({expr}))")
    assert obs.ok, obs.text
    return ast.literal_eval(obs.stdout.strip())


def _kb(k: Kernel, expr: str) -> int:
    value = _value(k, expr)
    assert isinstance(value, int)
    return value


@pytest.fixture(scope="module")
def parent(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kernel]:
    with Kernel(root=tmp_path_factory.mktemp("fork"), start="zygote") as k:
        assert k.execute(PARENT_STATE).ok
        yield k


def _close(kernels: object) -> None:
    for k in kernels:  # type: ignore[attr-defined]
        k.close()


def test_every_child_holds_the_state_and_changes_stay_private(parent: Kernel):
    children = parent.fork(3)
    try:
        assert len(children) == 3 and children.skipped == {}
        for child in children:
            assert child.aio.start_method == "zygote" and child.uid not in (None, parent.uid)
            assert _value(child, "(y, f(), C().g(), os_name, counter['a'])") == (5, 10, 11, "json", 2)
            assert _value(child, "cells()") is True  # `get_ipython` is the child's own shell
            assert _value(child, "(json.dumps([1]), type(json).__name__)") == ("[1]", "module")  # imported there
            assert _value(child, "shared is also_shared") is True  # one pickle: shared references stay shared
            assert _value(child, "notepad.facts") == ("fact before the fork",)
            assert _value(child, "open('/workspace/data.txt').read()") == "from the parent"
            assert _value(child, "sorted(_fork_skipped)") == ["submit_final_answer"]  # its stub: not installed
        one, two, three = children
        assert one.execute("y = 100; shared.append(3); notepad.add_fact('one only')").ok
        assert one.execute("open('/workspace/data.txt', 'w').write('changed in one')").ok
        assert _value(one, "f()") == 200  # a cell's function reads the child's own namespace
        for other in (two, three, parent):
            assert _value(other, "(y, f(), also_shared)") == (5, 10, [1, 2])
            assert _value(other, "notepad.facts") == ("fact before the fork",)
            assert _value(other, "open('/workspace/data.txt').read()") == "from the parent"
        leftovers = [p.name for p in parent.kernel_dir.parent.rglob("fork-*")]
        assert leftovers == []  # the snapshot file is gone once the children have loaded it
    finally:
        _close(children)


def _cgroup_dirs(name: str) -> list[Path]:
    return [p for p in Path("/sys/fs/cgroup").glob(f"*/workbench/{name}-*") if p.is_dir()]


def test_a_childs_death_leaves_the_others_and_nothing_is_left_behind(parent: Kernel):
    children = parent.fork(2)
    dirs = [c.kernel_dir for c in children]
    cgroups = [g for d in dirs for g in _cgroup_dirs(d.name)]
    pids = [p for c in children for p in process_tree(c.pid or 0)]
    os.kill(children[0].pid or 0, signal.SIGKILL)
    assert children[1].execute("y + 1").result == "6" and parent.execute("y + 1").result == "6"
    _close(children)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(_alive(p) for p in pids):
        time.sleep(0.05)
    assert not [p for p in pids if _alive(p)] and not [d for d in dirs if d.exists()]
    assert not [g for g in cgroups if g.exists()]


def test_a_child_that_cannot_load_the_state_fails_the_fork_and_leaves_nothing(parent: Kernel):
    before = {p.name for p in parent.kernel_dir.parent.iterdir()}
    parent.execute(
        "class Spoiled:\n    def __reduce__(self):\n        return (int, ('not a number',))\nspoiled = Spoiled()"
    )
    try:
        with pytest.raises(KernelError, match="could not load the parent's state"):
            parent.fork(2)
    finally:
        parent.execute("del spoiled")
    assert {p.name for p in parent.kernel_dir.parent.iterdir()} == before  # children's dirs and the snapshot gone


def test_values_that_do_not_copy_are_reported_not_dropped(parent: Kernel):
    parent.execute(
        "import socket, threading\nfh = open('/workspace/data.txt')\nsock = socket.socket()\n"
        "gen = (i for i in range(3))\nworker = threading.Thread(target=print)"
    )
    try:
        with pytest.raises(KernelError, match="fh"):
            parent.fork(1, strict=True)
        children = parent.fork(1)
        expected = {"fh": "TextIOWrapper", "sock": "socket", "gen": "generator", "worker": "Thread"}
        assert children.skipped == expected
        assert _value(children[0], "_fork_skipped") == {
            **expected,
            "submit_final_answer": "tool stub (run the setup cell in this kernel)",
        }
        assert _value(children[0], "[n in globals() for n in ('fh', 'sock', 'gen', 'worker')]") == [False] * 4
        _close(children)
    finally:
        parent.execute("fh.close(); sock.close(); del fh, sock, gen, worker")


def test_a_workspace_over_the_childrens_cap_is_a_clear_error(parent: Kernel):
    sparse = "import os\nwith open('/workspace/sparse.bin', 'wb') as f:\n    f.truncate(900 << 20)"  # over 768 MiB
    assert parent.execute(sparse).ok
    try:
        with pytest.raises(KernelError, match=r"limits\.disk_mb"):
            parent.fork(1)
    finally:
        parent.execute("os.remove('/workspace/sparse.bin')")
    assert [p.name for p in parent.kernel_dir.parent.rglob("fork-*")] == []


@pytest.mark.slow
def test_array_pages_are_shared_and_a_write_is_private(parent: Kernel):
    mb = 64
    parent.execute(f"import numpy as np\narr = np.ones({mb} << 17)")  # 8-byte floats: mb MiB
    pss = "sum(int(l.split()[1]) for l in open('/proc/self/smaps_rollup') if l.startswith('Pss:'))"
    children = parent.fork(3)
    try:
        before = [_kb(c, pss) for c in children]
        for c in children:
            assert _value(c, "float(arr.sum())") == float(mb << 17)  # every page read
        growth_kb = sum(_kb(c, pss) - b for c, b in zip(children, before, strict=True))
        assert growth_kb < 1.5 * mb * 1024  # about one copy in all, not three
        assert children[0].execute("arr[:] = 2.0").ok
        assert _value(children[0], "float(arr[0])") == 2.0
        assert _value(children[1], "float(arr[0])") == 1.0 and _value(parent, "float(arr[0])") == 1.0
    finally:
        _close(children)
        parent.execute("del arr")


def test_an_exec_kernel_forks_exec_kernels(tmp_path: Path):
    with Kernel(root=tmp_path, start="exec") as k:
        k.execute("z = {'a': 1}")
        children = k.fork(1)
        assert children[0].aio.start_method == "exec" and _value(children[0], "z") == {"a": 1}
        _close(children)
    assert not list(tmp_path.iterdir())


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.lists(
        st.one_of(
            st.text(st.characters(exclude_categories=())),  # lone surrogates too
            st.sampled_from(["\ud800", "a\udfffb"]),
            st.binary(),
        ),
        max_size=4,
    )
)
def test_text_and_bytes_survive_a_fork_unchanged(parent: Kernel, values: list[str | bytes]):
    assert parent.execute(f"values = {values!r}").ok
    children = parent.fork(1)
    try:
        assert children[0].execute(f"print(values == {values!r})").stdout.strip() == "True"
    finally:
        _close(children)

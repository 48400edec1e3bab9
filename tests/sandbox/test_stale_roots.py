"""Stale per-process rollout roots (`<tmp>/workbench-rollouts-<pid>`) are swept; live ones never.

Real processes throughout: owners are Python processes that create their default root the way
kernels do, killed with SIGKILL; pid reuse is real (a fresh pid namespace and ns_last_pid).
Each test points TMPDIR at its own directory, so the roots of other processes are untouched.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from workbench.sandbox.kernel_dirs import sweep_stale_roots

# A workbench process: makes a rollout dir under its default root, says where, then waits.
OWNER = textwrap.dedent("""
    import sys, time
    from workbench.sandbox import KernelDir, default_root
    rd = KernelDir.create(default_root(), None)
    (rd.outputs / "cell-1.txt").write_text("x" * 1000)
    print(rd.path, flush=True)
    time.sleep(120)
""")


def _env(tmp: Path) -> dict[str, str]:
    return {**os.environ, "TMPDIR": str(tmp)}


def _start_owner(tmp: Path) -> tuple[subprocess.Popen[str], Path]:
    p = subprocess.Popen([sys.executable, "-c", OWNER], env=_env(tmp), stdout=subprocess.PIPE, text=True)
    assert p.stdout is not None
    line = p.stdout.readline().strip()
    assert line, "the owner process printed no rollout dir"
    return p, Path(line)


def _kill(p: subprocess.Popen[str]) -> None:
    p.send_signal(signal.SIGKILL)
    p.wait()
    if p.stdout is not None:
        p.stdout.close()  # else a ResourceWarning (an error under the suite's filterwarnings)


def test_killed_owner_root_is_swept_live_one_is_kept(tmp_path: Path):
    dead, dead_dir = _start_owner(tmp_path)
    live, live_dir = _start_owner(tmp_path)
    try:
        assert dead_dir.parent == tmp_path / f"workbench-rollouts-{dead.pid}"
        _kill(dead)
        assert dead_dir.exists()  # SIGKILL left it behind
        removed = sweep_stale_roots(tmp_path)
        assert removed == [dead_dir.parent]
        assert not dead_dir.parent.exists()
        assert live_dir.is_dir() and (live_dir / "outputs" / "cell-1.txt").exists()
        assert sweep_stale_roots(tmp_path) == []
    finally:
        _kill(live)
    assert sweep_stale_roots(tmp_path) == [live_dir.parent]  # once its process is gone


def test_root_of_live_process_without_lock_is_kept(tmp_path: Path):
    """A root made by a live process that holds no lock (e.g. an older workbench) is kept."""
    p = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import os, sys, time; "
            "os.mkdir(os.path.join(sys.argv[1], f'workbench-rollouts-{os.getpid()}')); "
            "print('ok', flush=True); time.sleep(120)",
            str(tmp_path),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert p.stdout is not None and p.stdout.readline().strip() == "ok"
        root = tmp_path / f"workbench-rollouts-{p.pid}"
        assert sweep_stale_roots(tmp_path) == [] and root.is_dir()
    finally:
        _kill(p)
    assert sweep_stale_roots(tmp_path) == [root]


def test_dead_pid_roots_of_any_content_are_swept(tmp_path: Path):
    p = subprocess.Popen(["true"])
    p.wait()  # a pid that is certainly gone now (reaped)
    empty, full = tmp_path / f"workbench-rollouts-{p.pid}", tmp_path / "workbench-rollouts-4194304999"
    empty.mkdir()
    (full / "rollout-ab" / "run").mkdir(parents=True)
    (full / "rollout-ab" / "run" / "kernel.json").write_text("{}")
    assert sorted(sweep_stale_roots(tmp_path)) == sorted([empty, full])


def test_sweep_never_follows_symlinks_nor_leaves_its_pattern(tmp_path: Path):
    outside = tmp_path / "precious"
    (outside / "sub").mkdir(parents=True)
    (outside / "sub" / "data.txt").write_text("keep me")
    base = tmp_path / "tmp"
    base.mkdir()
    link_root = base / "workbench-rollouts-4194304998"  # a dead pid's name, but a symlink
    link_root.symlink_to(outside, target_is_directory=True)
    stale = base / "workbench-rollouts-4194304997"
    stale.mkdir()
    (stale / "escape").symlink_to(outside / "sub", target_is_directory=True)
    (stale / "file-link").symlink_to(outside / "sub" / "data.txt")
    for other in ("workbench-rollouts-x1", "workbench-rollouts-12-extra", "workbench-uids", "rollouts-4194304996"):
        (base / other).mkdir()
    assert sweep_stale_roots(base) == [stale]
    assert (outside / "sub" / "data.txt").read_text() == "keep me"
    assert link_root.is_symlink()
    assert sorted(p.name for p in base.iterdir()) == sorted(
        [
            "workbench-rollouts-4194304998",
            "workbench-rollouts-x1",
            "workbench-rollouts-12-extra",
            "workbench-uids",
            "rollouts-4194304996",
        ]
    )


def test_missing_base_sweeps_nothing(tmp_path: Path):
    assert sweep_stale_roots(tmp_path / "nope") == []


# Run inside a fresh pid namespace as its pid 1, so pids are small and can be reused on demand.
REUSE = textwrap.dedent("""
    import json, os, signal, subprocess, sys, time
    from workbench.sandbox.kernel_dirs import sweep_stale_roots
    tmp, owner_code = sys.argv[1], sys.argv[2]
    env = {**os.environ, "TMPDIR": tmp}

    def owner():
        p = subprocess.Popen([sys.executable, "-c", owner_code], env=env, stdout=subprocess.PIPE,
                             text=True)
        return p, p.stdout.readline().strip()

    def reuse(pid, argv):  # the next process this namespace starts gets `pid`
        with open("/proc/sys/kernel/ns_last_pid", "w") as f:
            f.write(str(pid - 1))
        return subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, text=True)

    out = {}
    # 1. the owner is killed and its pid goes to an unrelated process (started later)
    a, a_dir = owner()
    a.kill(); a.wait()
    old = time.time() - 30
    os.utime(os.path.dirname(a_dir), (old, old))  # last changed well before the reuse
    b = reuse(a.pid, ["sleep", "120"])
    out["reused"] = b.pid == a.pid
    out["swept_reused"] = [os.path.basename(p) for p in sweep_stale_roots(tmp)]
    b.kill(); b.wait()
    # 2. the pid goes to another workbench process: it makes its own rollout under that root
    c, c_dir = owner()
    c.kill(); c.wait()
    d = reuse(c.pid, [sys.executable, "-c", owner_code])
    d_dir = d.stdout.readline().strip()
    out["reused2"] = d.pid == c.pid
    out["same_root"] = os.path.dirname(c_dir) == os.path.dirname(d_dir)
    os.utime(os.path.dirname(d_dir), (old, old))  # so only the new owner's lock can protect it
    out["swept_live"] = [os.path.basename(p) for p in sweep_stale_roots(tmp)]
    out["d_dir_kept"] = os.path.isdir(d_dir)
    d.kill(); d.wait()
    out["swept_after"] = [os.path.basename(p) for p in sweep_stale_roots(tmp)]
    out["pid"] = a.pid
    out["pid2"] = c.pid
    print(json.dumps(out))
""")


@pytest.mark.skipif(os.geteuid() != 0, reason="reusing a pid on demand needs root (ns_last_pid)")
def test_reused_pid(tmp_path: Path):
    import json

    r = subprocess.run(
        ["unshare", "--pid", "--fork", "--mount-proc", sys.executable, "-c", REUSE, str(tmp_path), OWNER],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["reused"] and out["reused2"] and out["same_root"]
    assert out["swept_reused"] == [f"workbench-rollouts-{out['pid']}"]
    assert out["swept_live"] == [] and out["d_dir_kept"]  # the new owner's lock protects it
    assert out["swept_after"] == [f"workbench-rollouts-{out['pid2']}"]


_NAME = st.one_of(
    st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="/\x00"), min_size=1, max_size=30),
    st.binary(min_size=1, max_size=30)
    .filter(lambda b: b"/" not in b and b"\x00" not in b)
    .map(os.fsdecode),  # names that are not UTF-8
    st.builds(
        lambda d, tail: f"workbench-rollouts-{d}{tail}",
        st.sampled_from(["4194304990", "1", "", "٣", "0x1f", str(os.getpid())]),
        st.sampled_from(["", "-x", " ", "\n", "\t"]),
    ),
).filter(lambda n: n not in (".", "..") and len(os.fsencode(n)) < 200)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    entries=st.lists(
        st.tuples(_NAME, st.sampled_from(["dir", "file", "link", "full"])), max_size=8, unique_by=lambda e: e[0]
    )
)
def test_sweep_removes_exactly_dead_pid_roots(tmp_path_factory: pytest.TempPathFactory, entries: list[tuple[str, str]]):
    """Whatever else lives in the temp dir, the sweep removes only dead-pid root dirs."""
    tmp = tmp_path_factory.mktemp("base")
    base, outside = tmp / "base", tmp / "outside"
    base.mkdir()
    outside.mkdir()
    (outside / "keep.txt").write_text("keep")
    for name, kind in entries:
        path = base / name
        if kind == "file":
            path.write_bytes(b"x")
        elif kind == "link":
            path.symlink_to(outside, target_is_directory=True)
        else:
            path.mkdir()
            if kind == "full":
                (path / "escape").symlink_to(outside, target_is_directory=True)
                (path / "rollout-1" / "work").mkdir(parents=True)
    dead_dirs = {
        name
        for name, kind in entries
        if kind in ("dir", "full")
        and re.fullmatch(r"workbench-rollouts-[0-9]{1,10}", name)
        and name != f"workbench-rollouts-{os.getpid()}"
        and not os.path.exists(f"/proc/{name.rpartition('-')[2]}")
    }
    removed = sweep_stale_roots(base)
    assert {p.name for p in removed} == dead_dirs
    assert {p.name for p in base.iterdir()} == {name for name, _ in entries} - dead_dirs
    assert (outside / "keep.txt").read_text() == "keep"

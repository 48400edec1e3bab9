"""The sandbox's writable area is capped: filling it gives ENOSPC, never host disk, on both start methods.
Real bwrap."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kernel_starts import STARTS

from workbench.errors import ConfigError
from workbench.kernel import Kernel
from workbench.kernel.async_kernel import StartMethod
from workbench.kernel.procs import process_tree
from workbench.sandbox import Limits, SandboxProfile, SandboxSpec, build_argv, load_profile
from workbench.sandbox.cgroups import memory_bytes

ROOT = os.geteuid() == 0
MB = 1 << 20

# Writes `files` files of `size` bytes under each dir; reports per dir what got written and
# the errnos seen (each write in its own try: the kernel keeps going past the first failure).
FILL = """
import errno, os, shutil
def fill(dirs, files, size):
    report = {}
    for d in dirs:
        wrote, errs = 0, set()
        for i in range(files):
            try:
                with open(f"{d}/fill-{i}", "wb") as f:
                    f.write(b"x" * size)
                wrote += size
            except OSError as e:
                errs.add(errno.errorcode.get(e.errno, str(e.errno)))
        report[d] = (wrote, sorted(errs), shutil.disk_usage(d).total)
    return report
"""


def small_disk(tmp_mb: int = 2, disk_mb: int = 8) -> SandboxProfile:
    return load_profile("default").replace(tmp_size_mb=tmp_mb, limits={"disk_mb": disk_mb})


def host_bytes(path: Path) -> int:
    """Bytes the host's filesystem holds under `path` (allocated blocks, not apparent size)."""
    total = 0
    for p in [path, *path.rglob("*")]:
        try:
            total += os.lstat(p).st_blocks * 512
        except FileNotFoundError:
            pass
    return total


def host_mounts() -> str:
    with open("/proc/self/mountinfo") as f:
        return f.read()


@pytest.mark.parametrize("start", STARTS)
def test_filling_the_writable_area_is_enospc_and_the_kernel_lives_on(tmp_path: Path, start: StartMethod):
    profile = small_disk(tmp_mb=2, disk_mb=8)
    attempt = 32 * 4 * MB  # per dir: 16x the whole cap, so a leak to the host disk would show
    mounts_before = host_mounts()
    used_before = shutil.disk_usage(tmp_path).used
    with Kernel(profile, root=tmp_path, start=start) as k:
        rollout = k.kernel_dir
        k.execute(FILL, timeout=30)
        obs = k.execute("fill(['/workspace', '/tmp'], 32, 4 << 20)", timeout=120)
        assert obs.ok, obs.text
        report = eval(obs.result)
        ws_wrote, ws_errs, ws_total = report["/workspace"]
        tmp_wrote, tmp_errs, tmp_total = report["/tmp"]
        # each dir has its share of the one cap: /tmp tmp_size_mb, /workspace the rest
        assert (tmp_total, ws_total) == (2 * MB, 6 * MB)
        assert ws_errs == tmp_errs == ["ENOSPC"]
        assert ws_wrote + tmp_wrote <= 8 * MB and ws_wrote == 4 * MB  # one whole file fit
        # nothing of it is on the host: the rollout dir holds next to nothing, the disk barely moved
        assert host_bytes(rollout) < 256 * 1024
        assert shutil.disk_usage(tmp_path).used - used_before < attempt
        # the kernel answers, sees its files, and can write again once it frees space
        assert k.execute("1 + 1").result == "2"
        again = k.execute(
            "import os\nfor n in os.listdir('/workspace'): os.remove('/workspace/' + n)\n"
            "open('/workspace/after', 'wb').write(b'y' * (3 << 20))",
            timeout=30,
        )
        assert again.ok and again.result == str(3 * MB), again.text
        fstypes = k.execute(
            "sorted({l.split(' - ')[1].split()[0] for l in open('/proc/self/mountinfo') "
            "if l.split()[4] in ('/workspace', '/tmp')})"
        )
        assert fstypes.result == "['tmpfs']"
        pids, cgroup = process_tree(k.pid), k.aio._cgroup
    # close() leaves nothing: no dir, no process, no mount, no cgroup
    assert not rollout.exists()
    assert len(pids) >= 2 and not any(os.path.exists(f"/proc/{p}") for p in pids)
    assert host_mounts().count("\n") <= mounts_before.count("\n") and rollout.name not in host_mounts()
    assert cgroup is None or not any(d.exists() for d in cgroup.dirs)


@pytest.mark.skipif(not ROOT, reason="the run dir is sealed where the kernel runs as its own uid")
@pytest.mark.parametrize("start", STARTS)
def test_run_dir_takes_no_files_from_the_kernel(tmp_path: Path, start: StartMethod):
    with Kernel(small_disk(), root=tmp_path, start=start) as k:
        obs = k.execute(
            "import errno, os\nres = {}\n"
            "for p in ['/run/workbench/x', '/run/workbench/kernel.json', '/run/workbench/k-1']:\n"
            "    try: open(p, 'ab').write(b'x'); res[p] = 'WROTE'\n"
            "    except OSError as e: res[p] = errno.errorcode[e.errno]\n"
            "try: os.chmod('/run/workbench', 0o777); res['chmod'] = 'DONE'\n"
            "except OSError as e: res['chmod'] = errno.errorcode[e.errno]\nres"
        )
        res = eval(obs.result)
        assert "WROTE" not in res.values() and res["chmod"] == "EPERM", res
        assert sorted(p.name for p in (k.kernel_dir / "run").iterdir()) == [
            "k-1",
            "k-2",
            "k-3",
            "k-4",
            "k-5",
            "kernel.json",
        ]
        assert k.execute("open('/run/workbench/kernel.json').read(2)").result == "'{\"'"


# Two children hold 2 x 440 MiB; with the kernel that is ~950 MiB of memory_mb = 1024.
HOLD = """
import subprocess, sys
code = "b = b'x' * (440 << 20); print('ready', flush=True); import time; time.sleep(60)"
held = [subprocess.Popen([sys.executable, '-c', code], stdout=subprocess.PIPE) for _ in range(2)]
[p.stdout.readline() for p in held]
"""


@pytest.mark.slow
@pytest.mark.skipif(not ROOT, reason="per-sandbox cgroups need root")
@pytest.mark.parametrize("start", STARTS)
def test_full_disk_on_top_of_busy_memory_is_enospc_not_oom(tmp_path: Path, start: StartMethod):
    """tmpfs pages are memory: the cgroup allows memory_mb + disk_mb, so both fit at once."""
    profile = small_disk(tmp_mb=8, disk_mb=128).replace(limits={"memory_mb": 1024, "disk_mb": 128})
    with Kernel(profile, root=tmp_path, start=start) as k:
        cg = k.aio._cgroup
        if cg is None:
            pytest.skip("no writable cgroup hierarchy here (rlimits only)")
        name = "memory.limit_in_bytes" if cg.version == 1 else "memory.max"
        assert int((cg.dirs[0] / name).read_text()) == memory_bytes(profile.limits) == 1152 * MB
        try:
            assert k.execute(HOLD, timeout=60).ok
            k.execute(FILL, timeout=30)
            obs = k.execute("fill(['/workspace', '/tmp'], 40, 4 << 20)", timeout=60)
            assert obs.ok, obs.text
            report = eval(obs.result)
            assert report["/workspace"][:2] == (120 * MB, ["ENOSPC"]), report
            assert k.execute("[p.poll() for p in held]").result == "[None, None]"
            assert not cg.oom_killed() and k.alive
        finally:
            k.execute("[p.kill() for p in held]")


def test_unprivileged_argv_caps_the_disk(tmp_path: Path):
    """The single-bwrap chain (no root, own user namespace) mounts the same capped tmpfs."""
    (tmp_path / "run").mkdir()
    code = FILL + "print(fill(['/workspace', '/tmp'], 8, 1 << 20), os.getcwd())"
    argv = build_argv(SandboxSpec(small_disk(tmp_mb=2, disk_mb=6), tmp_path / "run"), [sys.executable, "-c", code])
    r = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr[-2000:]
    report, _, cwd = r.stdout.strip().rpartition(" ")
    assert (
        eval(report) == {"/workspace": (4 * MB, ["ENOSPC"], 4 * MB), "/tmp": (2 * MB, ["ENOSPC"], 2 * MB)}
        and cwd == "/workspace"
    )
    assert host_bytes(tmp_path) < 64 * 1024


@pytest.mark.parametrize(
    "toml, message",
    [
        ("[limits]\ndisk_mb = 0", "limits.disk_mb"),
        ('[limits]\ndisk_mb = "1G"', "limits.disk_mb"),
        ("tmp_size_mb = 512\n[limits]\ndisk_mb = 512", "raise limits.disk_mb or lower tmp_size_mb"),
    ],
)
def test_bad_disk_cap_names_the_fix(tmp_path: Path, toml: str, message: str):
    path = tmp_path / "p.toml"
    path.write_text(toml + "\n")
    with pytest.raises(ConfigError, match=message):
        load_profile(path)


@settings(max_examples=200, deadline=None)
@given(tmp_mb=st.integers(-2, 5000), disk_mb=st.integers(-2, 5000))
def test_any_cap_pair_is_a_valid_split_or_a_config_error(tmp_mb: int, disk_mb: int):
    try:
        p = SandboxProfile(tmp_size_mb=tmp_mb, limits=Limits(disk_mb=disk_mb))
    except ConfigError as exc:
        assert tmp_mb <= 0 or disk_mb <= 0 or tmp_mb >= disk_mb, exc
        return
    assert 0 < p.tmp_size_mb < p.limits.disk_mb
    argv = build_argv(SandboxSpec(p, Path("/nonexistent-run")), ["true"])
    sizes = {argv[i + 3]: int(argv[i + 1]) for i, a in enumerate(argv) if a == "--size"}
    assert sizes == {"/tmp": tmp_mb * MB, "/workspace": (disk_mb - tmp_mb) * MB}
    assert sum(sizes.values()) == disk_mb * MB

"""Sandbox profiles and the bwrap argv they produce (no kernels needed)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from workbench.errors import ConfigError, SandboxError
from workbench.sandbox import PROFILES_DIR, SandboxProfile, SandboxSpec, build_argv, check_sandbox, load_profile
from workbench.sandbox.bwrap import _which


def test_builtin_profiles_load_and_match_code_defaults():
    default = load_profile("default")
    assert default.replace(description="") == SandboxProfile()  # TOML and code defaults agree
    assert default.network is False and default.limits.processes > 0
    net = load_profile("networked")
    assert net.network is True and net.etc_network is True
    assert {p.stem for p in PROFILES_DIR.glob("*.toml")} >= {"default", "networked"}


def test_unknown_field_is_named(tmp_path: Path):
    bad = tmp_path / "mine.toml"
    bad.write_text("network = false\nnetwrok = true\n")
    with pytest.raises(ConfigError, match="netwrok"):
        load_profile(bad)
    bad.write_text("[limits]\nmemory_mbb = 10\n")
    with pytest.raises(ConfigError, match=r"limits: unknown field\(s\) memory_mbb"):
        load_profile(bad)


@pytest.mark.parametrize(
    "toml, field",
    [
        ('network = "no"', "network"),
        ("tmp_size_mb = -1", "tmp_size_mb"),
        ('ro_binds = ["relative/path"]', "ro_binds[0]"),
        ('ro_binds = ["/definitely/not/here"]', "ro_binds[0]"),
        ("[limits]\nprocesses = 0", "limits.processes"),
        ('[limits]\nmemory_mb = "lots"', "limits.memory_mb"),
        ("[env]\nFOO = 1", "env.FOO"),
        ('pass_env = ["BAD NAME"]', "pass_env"),
    ],
)
def test_bad_values_name_the_field(tmp_path: Path, toml: str, field: str):
    path = tmp_path / "p.toml"
    path.write_text(toml + "\n")
    with pytest.raises(ConfigError) as info:
        load_profile(path)
    assert field in str(info.value)


def test_invalid_toml_and_unknown_name(tmp_path: Path):
    path = tmp_path / "broken.toml"
    path.write_text("network = \n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_profile(path)
    with pytest.raises(ConfigError, match="unknown sandbox profile 'nope'"):
        load_profile("nope")


def test_user_profile_with_dataset_bind_and_replace(tmp_path: Path):
    data = tmp_path / "wiki"
    data.mkdir()
    path = tmp_path / "data.toml"
    path.write_text(f'ro_binds = ["{data}:/data"]\n[limits]\nmemory_mb = 2048\n')
    p = load_profile(path)
    assert p.name == "data" and p.bind_pairs() == [(data, "/data")]
    assert p.limits.memory_mb == 2048 and p.limits.processes == SandboxProfile().limits.processes
    q = p.replace(limits={"processes": 32})
    assert q.limits.processes == 32 and q.limits.memory_mb == 2048


def test_argv_isolates_and_scrubs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("WB_HOST_SECRET", "hunter2")
    run, work = tmp_path / "run", tmp_path / "work"
    run.mkdir(), work.mkdir()
    uid = 60999 if os.geteuid() == 0 else None
    argv = build_argv(SandboxSpec(load_profile("default"), run, work, uid=uid), ["python"])
    joined = " ".join(argv)
    assert "--unshare-net" in argv or ("--unshare-all" in argv and "--share-net" not in argv)
    assert "--clearenv" in argv and "--die-with-parent" in argv
    assert ("--as-pid-1" in argv) == (uid is None)  # as root, bwrap's own reaper is pid 1
    assert "hunter2" not in joined and "WB_HOST_SECRET" not in joined
    assert f"--nproc={SandboxProfile().limits.processes}" in argv
    net = build_argv(SandboxSpec(load_profile("networked"), run, work, uid=uid), ["python"])
    assert "--unshare-net" not in net and ("--share-net" in net or uid is not None)
    if uid is not None:  # the command runs as the unprivileged uid without capabilities
        assert f"--reuid={uid}" in argv and "--bounding-set=-all" in argv


def test_missing_tool_error_names_the_fix():
    with pytest.raises(SandboxError, match="apt-get install"):
        _which("workbench-no-such-tool")


def test_sandbox_available_here():
    check_sandbox()  # bubblewrap and user namespaces work on this machine


def test_the_favordynmods_hint_names_the_cgroup2_mount_and_is_silent_once_it_is_on():
    from workbench.sandbox.cgroups import favordynmods_hint

    v1 = "cgroup /sys/fs/cgroup/memory cgroup rw,relatime,memory 0 0\n"
    off = v1 + "cgroup2 /sys/fs/cgroup/unified cgroup2 rw,relatime 0 0\n"
    hint = favordynmods_hint(off)
    assert hint is not None and "mount -o remount,favordynmods /sys/fs/cgroup/unified" in hint
    assert favordynmods_hint(off.replace("rw,relatime 0", "rw,relatime,favordynmods 0")) is None
    assert favordynmods_hint(v1) is None  # no cgroup2 hierarchy: nothing to remount

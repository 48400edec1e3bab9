"""Rollout roots and uid leases live in shared temp dirs: a name planted there first is never reused."""

import os
import subprocess
import sys

import pytest

from workbench.errors import SandboxError
from workbench.sandbox.kernel_dirs import KernelDir

root_only = pytest.mark.skipif(os.geteuid() != 0, reason="chown to another uid needs root")


@root_only
def test_root_planted_by_another_user_is_refused(tmp_path):
    planted = tmp_path / "workbench-rollouts-4242"
    planted.mkdir(mode=0o700)
    os.chown(planted, 65534, 65534)
    with pytest.raises(SandboxError, match="not a private directory"):
        KernelDir.create(planted, uid=None)
    assert list(planted.iterdir()) == []


def test_planted_symlink_is_never_followed(tmp_path):
    target = tmp_path / "elsewhere"
    target.mkdir(mode=0o700)
    link = tmp_path / "workbench-rollouts-4243"
    link.symlink_to(target)
    with pytest.raises(SandboxError, match="symlink"):
        KernelDir.create(link, uid=None)
    assert list(target.iterdir()) == []


def test_root_open_to_others_is_refused(tmp_path):
    root = tmp_path / "workbench-rollouts-4244"
    root.mkdir()
    root.chmod(0o777)
    with pytest.raises(SandboxError, match="mode 777"):
        KernelDir.create(root, uid=None)


def test_own_private_root_is_used(tmp_path):
    rd = KernelDir.create(tmp_path / "workbench-rollouts-4245", uid=None)
    assert rd.work.is_dir() and rd.path.parent.name == "workbench-rollouts-4245"
    rd.remove()


def test_uid_leases_are_one_place_whatever_tmpdir(tmp_path):
    code = "from workbench.sandbox import kernel_dirs; print(kernel_dirs._LEASE_DIR)"
    env = {k: v for k, v in os.environ.items() if k != "WORKBENCH_UID_LEASE_DIR"}
    seen = {
        subprocess.run(
            [sys.executable, "-c", code], env={**env, "TMPDIR": str(d)}, text=True, capture_output=True, check=True
        ).stdout.strip()
        for d in (tmp_path, "/tmp")
    }
    assert seen == {"/tmp/workbench-uids"}


def test_the_old_names_of_kernel_dirs_still_work():
    from workbench.sandbox import KernelDir, RolloutDir, kernel_dir_base, rollout_base

    assert RolloutDir is KernelDir and rollout_base is kernel_dir_base  # deprecated names (docs/glossary.md)

"""Where default rollout roots go: the temp dir, or /dev/shm when the temp dir is on disk."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from workbench.sandbox.kernel_dirs import choose_base, filesystem

# /proc/self/mountinfo lines: id, parent, dev, root, mount point, options, " - ", type, source, super options
MOUNTINFO = "\n".join(
    [
        "22 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw",
        "23 22 0:21 / /dev/shm rw,nosuid,nodev shared:2 - tmpfs tmpfs rw,size=24683656k",
        "24 22 0:22 / /tmp/fast rw shared:3 - tmpfs tmpfs rw",
        "25 22 0:23 / /mnt/my\\040disk rw shared:4 - xfs /dev/vdb rw",
    ]
)
GIB = 1 << 30


def test_the_longest_mount_point_holding_a_path_names_its_file_system():
    assert filesystem(Path("/tmp"), MOUNTINFO) == "ext4"
    assert filesystem(Path("/tmp/fast/x/y"), MOUNTINFO) == "tmpfs"
    assert filesystem(Path("/tmp/fastest"), MOUNTINFO) == "ext4"  # a prefix of the name is not a parent
    assert filesystem(Path("/dev/shm"), MOUNTINFO) == "tmpfs"
    assert filesystem(Path("/mnt/my disk/data"), MOUNTINFO) == "xfs"  # mountinfo's \040 is a space
    assert filesystem(Path("/tmp"), "") == ""


def test_the_temp_dir_on_disk_gives_way_to_a_roomy_dev_shm_unless_tmpdir_is_set():
    assert choose_base(Path("/tmp"), False, MOUNTINFO, 2 * GIB) == Path("/dev/shm")
    assert choose_base(Path("/tmp"), True, MOUNTINFO, 2 * GIB) == Path("/tmp")  # TMPDIR is a choice
    assert choose_base(Path("/tmp"), False, MOUNTINFO, 64 << 20) == Path("/tmp")  # a container's 64 MiB
    assert choose_base(Path("/tmp/fast"), False, MOUNTINFO, 2 * GIB) == Path("/tmp/fast")  # already tmpfs
    on_disk = MOUNTINFO.replace("- tmpfs tmpfs rw,size", "- ext4 /dev/vdc rw,size")
    assert choose_base(Path("/tmp"), False, on_disk, 2 * GIB) == Path("/tmp")  # /dev/shm is no tmpfs


@given(st.text(max_size=300))
def test_any_mountinfo_text_gives_a_type_or_nothing(text: str):
    assert isinstance(filesystem(Path("/tmp/x"), text), str)


def test_a_process_without_tmpdir_puts_its_root_where_the_rule_says():
    env = {k: v for k, v in os.environ.items() if k != "TMPDIR"}
    code = "from workbench.sandbox import default_root; print(default_root())"
    out = subprocess.run([sys.executable, "-c", code], env=env, text=True, capture_output=True, check=True).stdout
    with open("/proc/self/mountinfo") as f:
        mountinfo = f.read()
    free = os.statvfs("/dev/shm")
    expected = choose_base(Path("/tmp"), False, mountinfo, free.f_bavail * free.f_frsize)
    root = Path(out.strip())
    assert root.parent == expected and root.name.startswith("workbench-rollouts-")
    env["TMPDIR"] = "/var/tmp"
    out = subprocess.run([sys.executable, "-c", code], env=env, text=True, capture_output=True, check=True).stdout
    assert Path(out.strip()).parent == Path("/var/tmp")

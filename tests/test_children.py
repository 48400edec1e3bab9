"""`die_with_parent`: a child never outlives the process that started it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

CHILD = (
    "import sys\nfrom workbench.children import die_with_parent\n"
    "die_with_parent(parent=int(sys.argv[1]))\nprint('alive')\n"
)


def test_a_child_whose_parent_is_still_there_lives_on():
    out = subprocess.run([sys.executable, "-c", CHILD, str(os.getpid())], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stdout.strip() == "alive"


def test_a_child_that_finds_its_parent_already_gone_dies_at_once():
    """The worker that was still starting when its parent was killed: its parent is not the pid it was given."""
    out = subprocess.run([sys.executable, "-c", CHILD, "1"], capture_output=True, text=True, timeout=60)
    assert out.returncode == -signal.SIGKILL and out.stdout == ""

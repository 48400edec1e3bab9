"""Entry points re-execute themselves under tcmalloc (workbench.allocator)."""

from __future__ import annotations

import os
import subprocess
import sys

from workbench.allocator import tcmalloc_library

PROBE = (
    "import sys\n"
    "from workbench.allocator import reexec_with_tcmalloc\n"
    "reexec_with_tcmalloc()\n"
    "maps = open('/proc/self/maps').read()\n"
    "print('tcmalloc' in maps, sys.argv[1:])\n"
)


def _probe(**env: str) -> str:
    clean = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "WORKBENCH_TCMALLOC")}
    out = subprocess.run(
        [sys.executable, "-c", PROBE, "a b", "--flag"],
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return out.stdout.strip()


def test_setup_installed_tcmalloc_and_an_entry_point_restarts_under_it_with_its_arguments():
    assert tcmalloc_library() is not None, "scripts/setup.sh installs libtcmalloc-minimal4"
    assert _probe() == "True ['a b', '--flag']"


def test_tcmalloc_can_be_turned_off():
    assert _probe(WORKBENCH_TCMALLOC="0") == "False ['a b', '--flag']"

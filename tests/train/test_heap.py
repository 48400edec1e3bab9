"""`fix_mmap_threshold`: freed large blocks leave the process's RSS (glibc), as the trainer relies on."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from workbench.errors import ConfigError
from workbench.train.config import TrainConfig
from workbench.train.heap import fix_mmap_threshold

# In a fresh process: free one 8 MiB block (glibc then serves 8 MiB blocks from its heap), allocate 40 more
# and free all but the last (it pins the heap's top, so nothing below it can be trimmed): the RSS left over.
LEFT_OVER = """
import json, sys
from workbench.train.heap import fix_mmap_threshold

def rss_mib():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS"):
            return int(line.split()[1]) / 1024

fixed = fix_mmap_threshold(int(sys.argv[1]))
first = bytearray(8 << 20)
del first
start = rss_mib()
blocks = [bytearray(8 << 20) for _ in range(40)]
del blocks[:-1]
print(json.dumps({"fixed": fixed, "left_mib": rss_mib() - start}))
"""


def _left_over(mib: int) -> dict:
    out = subprocess.run([sys.executable, "-c", LEFT_OVER, str(mib)], capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc")
def test_a_fixed_threshold_returns_freed_blocks_that_the_moving_one_keeps():
    """39 freed blocks of 8 MiB are 312 MiB: glibc's moving threshold keeps them resident; fixed at 1 MiB
    each block was its own mapping, so only the live one (8 MiB) is left."""
    moving, fixed = _left_over(0), _left_over(1)
    assert moving["fixed"] is False and fixed["fixed"] is True
    assert moving["left_mib"] > 250, moving
    assert fixed["left_mib"] < 40, fixed


def test_no_threshold_leaves_malloc_alone():
    assert fix_mmap_threshold(0) is False


@pytest.mark.parametrize("mib", [-1, 33])
def test_the_config_names_the_range(mib):
    with pytest.raises(ConfigError, match="heap_mmap_threshold_mib"):
        TrainConfig(heap_mmap_threshold_mib=mib)

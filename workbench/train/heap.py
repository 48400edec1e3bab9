"""Large frees go back to the operating system at once, so a training step's peak RSS is its live tensors.

glibc's malloc serves a request of 128 KiB or more with a private mmap and unmaps it on free, until a block
that large is freed: then it raises the threshold to that block's size (up to 32 MiB), and later blocks of
that size come from the heap, which keeps what is freed for reuse and rarely shrinks. A GRPO step allocates
and frees megabyte-sized activations pass after pass; under the moving threshold each pass's frees stay in
the heap, fragmented, and the next pass stacks on top (a LoRA step on SmolLM2-135M with gradient
checkpointing peaked at 3055 MiB, 1817 MiB with the threshold fixed at 1 MiB). Setting the threshold with
`mallopt` also turns the moving rule off. It is process-wide and costs a page fault per fresh page.

    fix_mmap_threshold(1)     # True where the C library is glibc; a no-op (False) elsewhere
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools

M_MMAP_THRESHOLD = -3  # glibc's mallopt parameter number (malloc.h)


@functools.cache
def _glibc() -> ctypes.CDLL | None:
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    try:
        libc = ctypes.CDLL(name)
        libc.gnu_get_libc_version  # noqa: B018  (only glibc has it; musl and macOS do not)
    except (OSError, AttributeError):
        return None
    return libc


def fix_mmap_threshold(mib: int) -> bool:
    """Serve (and return to the OS) every allocation of at least `mib` MiB with its own mmap, from now on,
    in this process. Returns whether it took effect (glibc only; `mib` <= 0 leaves malloc as it is)."""
    libc = _glibc()
    if mib <= 0 or libc is None:
        return False
    return bool(libc.mallopt(M_MMAP_THRESHOLD, int(mib) << 20))


__all__ = ["fix_mmap_threshold"]

"""Programs that print stop quietly when their reader goes away (`workbench show RUN ID | head`).

    if __name__ == "__main__":
        sys.exit(quiet_when_reader_leaves(main))

A closed stdout raises `BrokenPipeError` at the next write or flush; the program then exits with what a
shell reports for a writer stopped by SIGPIPE (141), like `cat big | head`, with no traceback.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable

# What a shell reports for a writer killed by SIGPIPE (128 + 13).
BROKEN_PIPE_EXIT = 141


def quiet_when_reader_leaves(run: Callable[[], int]) -> int:
    """`run()`'s exit status, or BROKEN_PIPE_EXIT once stdout's reader has gone."""
    try:
        try:
            return run()
        finally:  # also after argparse's --help exit: a closed pipe shows up here while output is still buffered
            sys.stdout.flush()
    except BrokenPipeError:
        return _reader_gone()


def _reader_gone() -> int:
    """Point stdout at devnull (Python's recipe), so the interpreter's final flush at exit does not raise
    a second BrokenPipeError."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    return BROKEN_PIPE_EXIT


__all__ = ["BROKEN_PIPE_EXIT", "quiet_when_reader_leaves"]

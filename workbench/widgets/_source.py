"""Where a widget reads from: a `Store` you hand it, or a run directory opened read-only."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from workbench.errors import ConfigError, StoreError

if TYPE_CHECKING:
    from workbench.store import Store


def open_store(source: Store | str | os.PathLike[str]) -> Store:
    """`source` itself if it is a Store, else a read-only Store on that run directory (safe while
    a run is still writing to it)."""
    from workbench.store import DB_NAME, Store

    if isinstance(source, Store):
        return source
    if not isinstance(source, (str, os.PathLike)):
        raise ConfigError(
            f"expected a Store or a run directory, got {type(source).__name__}; pass e.g. TrajectoryViewer('runs/demo')"
        )
    run_dir = Path(source)
    if not (run_dir / DB_NAME).exists():
        raise StoreError(
            f"no {DB_NAME} in {run_dir}; point at a run directory written by workbench "
            "(it holds trajectories.sqlite and run.json)"
        )
    return Store.open_readonly(run_dir)


class Ticker:
    """Calls `fn` every `seconds` on a daemon thread until `stop()` or `fn` returns False;
    an exception stops it too and is kept in `.error`."""

    def __init__(self, fn: Callable[[], object], seconds: float) -> None:
        if seconds <= 0:
            raise ConfigError(f"auto-refresh interval must be > 0 seconds, got {seconds}")
        self.seconds = seconds
        self.error: BaseException | None = None
        self.ticks = 0
        self._fn = fn
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="workbench-refresh", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self.seconds):
            try:
                more = self._fn()
                self.ticks += 1
                if more is False:
                    return
            except Exception as exc:  # keep the notebook alive; surface it on the ticker
                self.error = exc
                return

    @property
    def running(self) -> bool:
        return self._thread.is_alive()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=self.seconds + 5)


def restart_ticker(current: Ticker | None, fn: Callable[[], object], seconds: float | None) -> Ticker | None:
    """Stop `current` (if any) and, when `seconds` is set, start a new ticker calling `fn`."""
    if current is not None:
        current.stop()
    return Ticker(fn, seconds) if seconds else None

"""How many kernel connections a tool gateway holds open, and which it closes to make room.

Open connections are file descriptors of the host process, which every rollout shares. Each
gateway joins a process-wide `ConnectionBudget` and may hold its share; its `OpenConnections`
closes idle connections (never-authenticated first, then the longest idle) to make room for a new
one, and makes the accept loop wait while nothing can be closed — meanwhile new connections wait
in the listen backlog, costing the host no file descriptor.
"""

from __future__ import annotations

import asyncio
import resource
import threading
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

EVICTABLE_AFTER_S = 1.0  # an authenticated connection idle this long may be closed to make room


class BudgetMember(Protocol):
    def budget_changed(self) -> None:
        """Called from any thread when this member's share may have changed."""


class ConnectionBudget:
    """Open gateway connections in this process, shared equally by the live gateways.

    `total` defaults to a quarter of the process's open-file limit (RLIMIT_NOFILE), at least 64,
    read when asked. Each gateway's share is `total // live gateways`, never below `min_share`.
    """

    def __init__(self, total: int | None = None, *, min_share: int = 4) -> None:
        self._total = total
        self.min_share = min_share
        self._members: weakref.WeakSet[BudgetMember] = weakref.WeakSet()  # one never closed drops out
        self._lock = threading.Lock()

    @property
    def total(self) -> int:
        if self._total is not None:
            return self._total
        soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
        return max(64, (65536 if soft == resource.RLIM_INFINITY else soft) // 4)

    def share(self) -> int:
        with self._lock:
            live = max(1, len(self._members))
        return max(self.min_share, self.total // live)

    def join(self, member: BudgetMember) -> None:
        """Count `member` in; the others shrink to their new share (idle connections first)."""
        with self._lock:
            others = list(self._members)
            self._members.add(member)
        for other in others:
            other.budget_changed()

    def leave(self, member: BudgetMember) -> None:
        with self._lock:
            self._members.discard(member)
            others = list(self._members)
        for other in others:
            other.budget_changed()  # their share grew


SHARED_BUDGET = ConnectionBudget()  # what every gateway in this process shares by default


@dataclass(eq=False)
class Conn:
    writer: asyncio.StreamWriter
    opened: float  # time.monotonic()
    last_active: float
    authed: bool = False  # sent a request with the right token
    busy: bool = False  # a request is being answered
    evicted: bool = False


class OpenConnections:
    """One gateway's open connections, kept within `limit()`; `on_close(why)` hears each eviction."""

    def __init__(self, limit: Callable[[], int], on_close: Callable[[str], None]) -> None:
        self.limit = limit
        self.on_close = on_close
        self.conns: set[Conn] = set()
        self.changed = asyncio.Event()  # a connection closed or went idle, or the share changed

    def __len__(self) -> int:
        return len(self.conns)

    def add(self, conn: Conn) -> None:
        self.conns.add(conn)

    def discard(self, conn: Conn) -> None:
        """`conn` closed: forget it and wake the accept loop."""
        self.conns.discard(conn)
        self.changed.set()

    def went_idle(self, conn: Conn) -> None:
        conn.busy, conn.last_active = False, time.monotonic()
        self.changed.set()  # idle now: may be closed to make room

    def evictable(self, now: float) -> list[Conn]:
        """Idle connections that may be closed to make room, never-authenticated and oldest first.

        One that never authenticated is fair game at once (a connection is busy from accept when
        its request is already waiting); an authenticated one after EVICTABLE_AFTER_S idle."""
        idle = [c for c in self.conns if not c.busy and (not c.authed or now - c.last_active >= EVICTABLE_AFTER_S)]
        return sorted(idle, key=lambda c: (c.authed, c.last_active))

    def shed(self, keep: int | None = None) -> None:
        """Close evictable connections until at most `keep` (default: the limit) are open."""
        limit = self.limit()
        keep = limit if keep is None else keep
        for conn in self.evictable(time.monotonic())[: max(0, len(self.conns) - keep)]:
            conn.evicted = True
            self.conns.discard(conn)
            conn.writer.close()
            self.on_close(f"closed an idle connection to stay within this rollout's share of {limit} connections")

    def next_evictable_in(self) -> float | None:
        """Seconds until an idle authenticated connection becomes evictable (None: all are busy)."""
        idle = [c.last_active for c in self.conns if not c.busy]
        return max(0.01, min(idle) + EVICTABLE_AFTER_S - time.monotonic()) if idle else None

    def limit_changed(self) -> None:
        """On the loop: the share may have shrunk (shed) or grown (wake the accept loop)."""
        self.shed()
        self.changed.set()

    async def room(self) -> None:
        """Wait until one more connection fits in the limit, or one can be closed for it."""
        while True:
            if len(self.conns) < self.limit() or self.evictable(time.monotonic()):
                return
            self.changed.clear()
            try:  # until a connection closes or goes idle, the share grows, or an idle one ripens
                await asyncio.wait_for(self.changed.wait(), self.next_evictable_in())
            except TimeoutError:
                pass

    def close_all(self) -> None:
        for conn in list(self.conns):
            conn.writer.close()  # their handlers see EOF and return

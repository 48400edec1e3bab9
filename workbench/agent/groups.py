"""`AgentConfig.fork_groups`: a GRPO group's setup runs once; its other episodes start from a copy.

A group is the jobs of one batch that share a task, a tool set, the sandbox setting and the setup
(the task variable, `AgentConfig.task_setup`). With `fork_groups=True` the first of them to start
runs as usual (its kernel, gateway, setup cell, `task_setup`), then snapshots its kernel
(`workbench.kernel.fork.snapshot`) before its first turn and goes on with its episode; every other
episode of the group opens its environment as usual and restores that snapshot instead of running
`task_setup` (see `workbench.kernel.fork`: a state copy, each episode in its own isolated kernel).
If the first episode fails before its snapshot, the others run the setup themselves. Groups of
one, configs without `fork_groups` and groups without a `task_setup` run as before.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Hashable, Sequence

from workbench.agent.executor import EpisodeJob
from workbench.kernel.fork import Snapshot

GroupKey = tuple[Hashable, ...]
Promise = asyncio.Future[Snapshot | None]  # the group's snapshot, or None: each episode runs the setup


def _forks(job: EpisodeJob) -> bool:
    """Without a `task_setup` a group's setup is the setup cell, which every episode runs anyway (its
    own tool stubs, its own gateway): a copy would only add work."""
    return job.agent.fork_groups and bool(job.agent.task_setup)


def group_key(job: EpisodeJob) -> GroupKey:
    """What the episodes of one group share (a `Task` itself is not hashable)."""
    agent = job.agent
    task = job.task
    return (task.id, task.question, job.tools, agent.profile, agent.isolation, agent.task_variable, agent.task_setup)


class GroupSetups:
    """The snapshots of one batch's groups, made by each group's first episode; `close()` discards them."""

    def __init__(self, jobs: Sequence[EpisodeJob]) -> None:
        self._sizes = Counter(group_key(job) for job in jobs if _forks(job))
        self._states: dict[GroupKey, Promise] = {}

    async def join(self, job: EpisodeJob) -> tuple[Promise | None, Snapshot | None]:
        """(promise, state). The first episode of a group gets a promise to keep (`keep`) with its
        kernel's snapshot; the others wait for that snapshot. (None, None): run the setup."""
        key = group_key(job)
        if not _forks(job) or self._sizes[key] < 2:
            return None, None
        if key not in self._states:
            self._states[key] = asyncio.get_running_loop().create_future()
            return self._states[key], None
        return None, await asyncio.shield(self._states[key])

    def close(self) -> None:
        """Discard every snapshot (a promise still open is kept with None)."""
        for promise in self._states.values():
            if not promise.done():
                promise.set_result(None)
            elif (state := promise.result()) is not None:
                state.discard()
        self._states.clear()


def keep(promise: Promise | None, state: Snapshot | None) -> None:
    """Fulfil a group's promise once; a later call (from a failure path, or after `close()`) only
    discards the snapshot it brings."""
    if promise is not None and not promise.done():
        promise.set_result(state)
    elif state is not None:
        state.discard()


__all__ = ["GroupKey", "GroupSetups", "Promise", "group_key", "keep"]

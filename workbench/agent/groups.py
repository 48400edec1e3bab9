"""`AgentConfig.fork_groups`: a GRPO group's setup runs once; its episodes start from a copy of it.

A group is the jobs of one batch that share a task, a tool set, the sandbox setting and the setup
(the task variable, `AgentConfig.task_setup`). With `fork_groups=True` the first of them to start
opens an environment of its own (a kernel, a gateway, the setup cell), runs `task_setup` there,
snapshots that kernel (`workbench.kernel.fork.snapshot`) and closes it; then every episode of the
group opens its environment as usual and restores the snapshot instead of running `task_setup`
(see `workbench.kernel.fork`: a state copy, each episode in its own isolated kernel). Groups of
one, and configs without `fork_groups`, run as before.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Awaitable, Callable, Hashable, Sequence

from workbench.agent.executor import EpisodeJob
from workbench.kernel.fork import Snapshot

GroupKey = tuple[Hashable, ...]


def group_key(job: EpisodeJob) -> GroupKey:
    """What the episodes of one group share (a `Task` itself is not hashable)."""
    agent = job.agent
    task = job.task
    return (task.id, task.question, job.tools, agent.profile, agent.isolation, agent.task_variable, agent.task_setup)


class GroupSetups:
    """The snapshots of one batch's groups, made on first use and discarded by `close()`."""

    def __init__(self, jobs: Sequence[EpisodeJob]) -> None:
        self._sizes = Counter(group_key(job) for job in jobs if job.agent.fork_groups)
        self._states: dict[GroupKey, asyncio.Future[Snapshot]] = {}

    async def state_for(self, job: EpisodeJob, make: Callable[[], Awaitable[Snapshot]]) -> Snapshot | None:
        """The group's snapshot (`make` builds it once), or None when `job` runs its setup itself."""
        key = group_key(job)
        if not job.agent.fork_groups or self._sizes[key] < 2:
            return None
        if key not in self._states:
            self._states[key] = asyncio.ensure_future(make())
        return await asyncio.shield(self._states[key])

    def close(self) -> None:
        """Discard every snapshot (a group setup still running is cancelled)."""
        for future in self._states.values():
            if future.done() and not future.cancelled() and future.exception() is None:
                future.result().discard()
            else:
                future.cancel()
        self._states.clear()


__all__ = ["GroupKey", "GroupSetups", "group_key"]

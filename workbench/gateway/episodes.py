"""`HarnessEpisodes`: an episode runner whose episodes are your own agent harness, played through a
model gateway in front of the policy the trainer passes (its live one).

    async def agent(r: Rollout) -> str:          # or a plain function: it runs in a thread
        reply = await r.client.chat.completions.create(model="any", messages=[...])
        return reply.choices[0].message.content  # the answer; the trainer's reward scores it

    runner = HarnessEpisodes(agent)
    trajs = await runner(tasks, policy)          # one per task, in order, unscored and unwritten

A rollout ends when the harness returns (its value is the answer) or calls `r.finish(answer)`; one
that raises or runs past `limit_s` ends as `error`, its traceback kept. A rollout of several segments
(forks) gives several training rows sharing its reward. `aclose()` stops the gateway.
"""

from __future__ import annotations

import asyncio
import inspect
import traceback
from collections.abc import Callable, Sequence
from typing import Any

from workbench.gateway.config import GatewayConfig
from workbench.gateway.gateway import ModelGateway, Rollout
from workbench.policies.base import Policy
from workbench.trajectory import Task, Trajectory

__all__ = ["HarnessAgent", "HarnessEpisodes"]

HarnessAgent = Callable[[Rollout], Any]
"""`agent(rollout)`: async or plain; returns the answer (or None after `rollout.finish(answer)`)."""


class HarnessEpisodes:
    """Plays `agent` once per task through a `ModelGateway`; an `EpisodeRunner[Policy]`."""

    def __init__(
        self,
        agent: HarnessAgent,
        *,
        config: GatewayConfig | None = None,
        concurrency: int = 16,
        limit_s: float | None = None,
        run_id: str = "",
    ) -> None:
        if not callable(agent):
            raise TypeError(f"HarnessEpisodes needs a callable agent(rollout), got {agent!r}")
        self.agent, self.config, self.limit_s, self.run_id = agent, config or GatewayConfig(), limit_s, run_id
        self.concurrency = max(1, concurrency)
        self._gateway: ModelGateway | None = None

    def _gateway_for(self, policy: Policy) -> ModelGateway:
        """The gateway for `policy`'s tokenizer: one across batches (and across the overlapping waves of
        asynchronous rollouts, each with its own policy); a new one only when the tokenizer changes."""
        gw = self._gateway
        if gw is None or _tokenizer(gw.policy) is not _tokenizer(policy):
            if gw is not None:
                gw.stop()
            gw = self._gateway = ModelGateway(policy, config=self.config, run_id=self.run_id).start()
        return gw

    async def __call__(self, tasks: Sequence[Task], policy: Policy) -> list[Trajectory]:
        gw = self._gateway_for(policy)
        gate = asyncio.Semaphore(self.concurrency)

        async def one(task: Task) -> Trajectory:
            async with gate:  # each rollout samples from this call's policy (the trainer's live one for this batch)
                return await self._play(gw.rollout(task, policy=policy))

        return list(await asyncio.gather(*(one(t) for t in tasks)))

    async def _play(self, rollout: Rollout) -> Trajectory:
        """The rollout's trajectory once the agent returned, raised or ran out of time (then it is forgotten)."""
        try:
            answer = await asyncio.wait_for(self._run(rollout), self.limit_s)
        except TimeoutError:
            traj = rollout.finish(error=f"the harness ran past its limit ({self.limit_s:g} s)")
        except Exception as exc:
            traj = rollout.finish(error="".join(traceback.format_exception(exc)))
        else:
            await rollout.aclose()
            traj = rollout.finish(answer) if rollout.status == "open" else rollout.trajectory
        rollout.gateway.service.forget(rollout.id)  # a long training run keeps no finished rollout in memory
        return traj

    async def _run(self, rollout: Rollout) -> Any:
        """The agent's answer: a coroutine function is awaited here, a plain one runs in a thread."""
        if inspect.iscoroutinefunction(self.agent):
            return await self.agent(rollout)
        out = await asyncio.to_thread(self.agent, rollout)
        return await out if inspect.isawaitable(out) else out

    def close(self) -> None:
        if self._gateway is not None:
            self._gateway.stop()
            self._gateway = None

    async def aclose(self) -> None:
        self.close()


def _tokenizer(policy: Policy) -> object:
    """What a gateway's chat rendering depends on: the tokenizer behind `policy`'s codec (else the codec)."""
    codec = policy.codec
    return getattr(codec, "tokenizer", codec)

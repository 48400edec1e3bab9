"""`HarnessEpisodes`: a harness (async or plain) as an episode runner: one trajectory per task, in
order, its calls as steps, its return value the answer; a harness that raises or runs past its limit
ends as error with the traceback."""

from __future__ import annotations

import asyncio
import time

from gateway_helpers import echo_policy

from workbench.contracts import EpisodeRunner
from workbench.gateway import HarnessEpisodes
from workbench.trajectory import Task

TASKS = [Task(f"t{i}", f"question {i}") for i in range(4)]


async def two_turn_agent(r) -> str:
    messages = [{"role": "user", "content": r.task.question}]
    first = await r.client.chat.completions.create(model="m", messages=messages)
    messages += [first.choices[0].message.model_dump(exclude_none=True), {"role": "user", "content": "sure?"}]
    second = await r.client.chat.completions.create(model="m", messages=messages)
    return second.choices[0].message.content


def plain_agent(r) -> str:
    reply = r.sync_client.chat.completions.create(model="m", messages=[{"role": "user", "content": r.task.question}])
    return reply.choices[0].message.content


def test_an_async_harness_plays_each_task_as_one_rollout(chatml_codec):
    runner = HarnessEpisodes(two_turn_agent)
    assert isinstance(runner, EpisodeRunner)
    policy = echo_policy(chatml_codec)
    try:
        trajs = asyncio.run(runner(TASKS, policy))
        again = asyncio.run(runner(TASKS[:1], policy))  # the next training step reuses the gateway
    finally:
        runner.close()
    assert [t.task.id for t in trajs] == [t.id for t in TASKS]
    for traj in [*trajs, *again]:
        assert traj.final_answer == "turn 1" and traj.termination == "submitted"
        assert len(traj.steps) == 2 and len(traj.segments()) == 1


def test_a_plain_harness_runs_in_a_thread(chatml_codec):
    runner = HarnessEpisodes(plain_agent, concurrency=2)
    try:
        trajs = asyncio.run(runner(TASKS, echo_policy(chatml_codec)))
    finally:
        runner.close()
    assert [t.final_answer for t in trajs] == ["turn 0"] * 4


def test_a_harness_that_raises_or_hangs_ends_as_error(chatml_codec):
    def broken(r):
        raise KeyError("no such tool")

    def hangs(r):
        time.sleep(3)

    for agent, why in ((broken, "no such tool"), (hangs, "ran past its limit (0.5 s)")):
        runner = HarnessEpisodes(agent, limit_s=0.5)
        try:
            [traj] = asyncio.run(runner(TASKS[:1], echo_policy(chatml_codec)))
        finally:
            runner.close()
        assert traj.termination == "error" and why in traj.error

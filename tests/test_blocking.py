"""run_blocking finishes a coroutine from sync code with or without a running loop."""

import asyncio

import pytest

from workbench.blocking import run_blocking


async def _double(x):
    await asyncio.sleep(0)
    return 2 * x


async def _fail():
    raise KeyError("boom")


def test_outside_a_loop():
    assert run_blocking(_double(21)) == 42


def test_inside_a_running_loop_does_not_deadlock():
    async def caller():  # a sync reward or tool called from a coroutine on the agent's loop
        return run_blocking(_double(5))

    assert asyncio.run(caller()) == 10


def test_errors_reach_the_caller():
    with pytest.raises(KeyError, match="boom"):
        run_blocking(_fail())

    async def caller():
        return run_blocking(_fail())

    with pytest.raises(KeyError, match="boom"):
        asyncio.run(caller())

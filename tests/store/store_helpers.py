"""Realistic trajectories built from the real schema (shared by conftest.py and writer_child.py)."""

from __future__ import annotations

import random

from workbench.trajectory import HostCall, Step, Task, Trajectory


def make_trajectory(
    i: int = 0,
    *,
    run_id: str = "run-a",
    role: str = "solver",
    hops: int | None = 2,
    reward: float | None = 1.0,
    steps: int = 3,
    origin: str | None = None,
    termination: str = "submitted",
    policy: object = "scripted",
) -> Trajectory:
    """A trajectory shaped like a real rollout: think/code/output, tool calls, tokens, notepad."""
    rng = random.Random(i)
    task = Task(
        id=f"task-{i}",
        question=f"Who founded the city that hosts museum #{i}?",
        golden_answers=[f"Founder {i}"],
        metadata={"hops": hops} if hops is not None else {},
    )
    traj = Trajectory(
        task=task,
        run_id=run_id,
        role=role,
        termination=termination,
        lineage={"policy": policy, **({"origin": origin} if origin else {})},
        started_at=1_700_000_000.0 + i,
        ended_at=1_700_000_005.0 + i,
    )
    for s in range(steps):
        ids = [rng.randrange(256) for _ in range(40)]
        traj.steps.append(
            Step(
                index=s,
                raw=f"<think>step {s}</think><code>print(search('museum {i}'))</code>",
                think=f"I should look up museum {i}, step {s}.",
                code=f"print(search('museum {i}'))",
                observation={"stdout": f"result {s}"},
                observation_text=f"Doc {s}: museum {i} is in town {s}.",
                notepad={"facts": [f"fact {k}" for k in range(s + 1)]},
                host_calls=[
                    HostCall(name="search", arguments={"query": f"museum {i}"}, result=[f"doc {s}"], duration_s=0.01)
                ],
                prompt_ids=list(range(30)) if s == 0 else None,
                completion_ids=ids,
                logprobs=[-rng.random() for _ in ids],
                observation_ids=[rng.randrange(256) for _ in range(20)],
                finish_reason="stop",
            )
        )
    traj.final_answer = f"Founder {i}"
    if reward is not None:
        traj.rewards = {"outcome": reward, "format": 0.0, "total": reward}
        traj.reward_spec = "em"
    return traj

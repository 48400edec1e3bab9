"""A demo-sized run for the browser tests and the viewer bench, built with real parts.

`build_demo_run(run_dir)`: two Dr. Zero iterations with the scripted world proposer and solver
(real sandboxed kernels, a real BM25 search, a real store), so proposers link to solver attempts
and metrics and iteration events exist; then two attempts at one task by two checkpoints that carry
token ids, an env mask and logprobs, and part ways at their third turn (for the token view and
compare). `build_large_store(run_dir, n)`: n summary-realistic trajectories written straight to a
store (for the 10,000-row bench).
"""

from __future__ import annotations

import copy
import math
import random
from pathlib import Path

from workbench.store import Store
from workbench.trajectory import Step, Task, Trajectory

TOKEN_POLICIES = ("tiny@step-0", "tiny@step-40")


def _tokenised(base: Trajectory, policy: str, diverge_at: int | None, seed: int) -> Trajectory:
    rng = random.Random(seed)
    t = copy.deepcopy(base)
    t.id = f"tok{seed:05d}" + base.id[8:]
    t.lineage = {"policy": policy, "checkpoint": policy.split("@")[1]}
    t.metadata = {**t.metadata, "source": "token demo"}
    for i, step in enumerate(t.steps):
        step.completion_ids = [rng.randrange(50, 4000) for _ in range(24 + 3 * i)]
        step.logprobs = [math.log(max(1e-4, rng.random() ** 3)) for _ in step.completion_ids]
        step.observation_ids = [rng.randrange(50, 4000) for _ in range(12)]
        step.prompt_ids = list(range(80)) if i == 0 else None
        if diverge_at is not None and i >= diverge_at:
            step.code = (step.code or "") + "\nprint('a different path')"
            step.observation_text = step.observation_text + "\na different path"
    return t


def build_demo_run(run_dir: Path) -> dict[str, object]:
    from workbench.evolve import DrZeroConfig, run_drzero, sampling_world_solver, world_proposer
    from workbench.search import BM25Retriever, Corpus
    from workbench.worlds import make_world

    world = make_world(seed=0, size="small")
    retriever = BM25Retriever.build(Corpus.from_rows(world.corpus()), show_progress=False)
    agent = {"max_steps": 6, "max_context_tokens": 16384}
    cfg = DrZeroConfig(
        run_dir=str(run_dir),
        iterations=2,
        prompts_per_iteration=6,
        samples_per_prompt=1,
        solver_attempts=3,
        concurrency=4,
        seed=1,
        progress=False,
        proposer_agent=agent,
        solver_agent=agent,
    )
    result = run_drzero(
        cfg,
        proposer_policy=world_proposer(noise=0.5, seed=2),
        solver_policy=sampling_world_solver(noise=0.3),
        retriever=retriever,
    )
    store: Store = result.store
    solvers = [t for t in store.iter_trajectories(role="solver") if len(t.steps) >= 3]
    base = solvers[0]
    a = _tokenised(base, TOKEN_POLICIES[0], None, 1)
    b = _tokenised(base, TOKEN_POLICIES[1], 2, 2)
    store.close()
    with Store(run_dir) as writer:
        writer.log_metrics(f"{result.run_id}/solver", 1, {"entropy": 1.2, "completions/mean_length": 80})
        writer.write_many([a, b])
        total = len(writer)
    return {"run_id": result.run_id, "token_ids": [a.id, b.id], "diverge_at": 2, "total": total}


def build_large_store(run_dir: Path, n: int = 10_000, seed: int = 0) -> None:
    rng = random.Random(seed)
    with Store(run_dir, synchronous="NORMAL") as store:
        batch = []
        for i in range(n):
            hops = 1 + i % 4
            task = Task(
                f"q{i}",
                f"What is the capital of the country where city {i} lies? (hop {hops})",
                [f"City {i}"],
                {"hops": hops},
            )
            t = Trajectory(
                task=task,
                run_id="bench",
                termination=rng.choice(["submitted", "max_steps"]),
                final_answer=f"City {rng.randrange(n)}",
                lineage={"policy": f"ckpt-{i % 3}"},
                rewards={"em": float(i % 2), "total": float(i % 2)},
                reward_spec="em",
                started_at=1_700_000_000.0 + i,
            )
            t.steps = [
                Step(
                    s,
                    "",
                    think=f"step {s}",
                    code=f"hits = search('city {i} hop {s}')\nprint(hits)",
                    observation={"stdout": f"result {s}"},
                    observation_text=f"result {s}",
                    notepad={"facts": [f"fact {k}" for k in range(s + 1)]},
                    completion_ids=list(range(30)),
                    logprobs=[-0.5] * 30,
                    observation_ids=list(range(10)),
                )
                for s in range(4)
            ]
            batch.append(t)
            if len(batch) == 500:
                store.write_many(batch)
                batch = []
        if batch:
            store.write_many(batch)

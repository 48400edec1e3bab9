"""Self-evolution over one executor: every trajectory written once, the executor's pool shared by
both roles and both updates, training hooks called in the caller's thread."""

from __future__ import annotations

import threading

from workbench.agent.recorder import Recorder
from workbench.evolve import DrZeroConfig, evolve_executor, proposer_tools, run_drzero, solver_tools, world_proposer
from workbench.kernel.sync import run_sync
from workbench.worlds.scripted.proposer import sampling_world_solver

AGENT = {"max_steps": 6, "max_context_tokens": 16384}


def test_every_trajectory_is_written_once_over_one_executor(tmp_path, retriever, counting_store):
    caller = threading.current_thread()
    hooks: list[tuple[str, bool, int]] = []

    def train_fn(req):
        # what the trainer does: run the runner with the policy it trains, score, record each once
        policy = world_proposer(seed=5) if req.role == "proposer" else sampling_world_solver(noise=0.2)
        trajs = run_sync(req.episodes(req.tasks[:2], policy))
        recorder = Recorder(req.store)
        for t in trajs:
            recorder.record(t, req.reward)
        hooks.append((req.role, threading.current_thread() is caller, len(trajs)))
        return {"rolled_out": len(trajs)}

    executor = evolve_executor(proposer_tools(retriever), solver_tools(retriever), concurrency=4)
    cfg = DrZeroConfig(
        run_dir=str(tmp_path / "dz"),
        prompts_per_iteration=3,
        solver_attempts=2,
        concurrency=4,
        seed=1,
        progress=False,
        proposer_agent=AGENT,
        solver_agent=AGENT,
        hop_weights={1: 1.0},
    )
    try:
        with counting_store(tmp_path / "dz") as store:
            result = run_drzero(
                cfg,
                proposer_policy=world_proposer(),
                solver_policy=sampling_world_solver(noise=0.2),
                retriever=retriever,
                train_fn=train_fn,
                store=store,
                executor=executor,
            )
            assert hooks == [("proposer", True, 2), ("solver", True, 2)]
            stored = list(store.iter_trajectories())
            assert stored and store.writes == {t.id: 1 for t in stored}  # each one written exactly once
            roles = {t.role for t in stored}
            assert roles == {"proposer", "solver"}
            [it] = result.iterations
            for pid in it.proposer_ids:  # scored before their only write, the spec in the history
                assert store.reward_history(pid)["spec_name"].iloc[-1] == "drzero_proposer"
            update = [t for t in stored if t.lineage.get("phase") == "proposer_update"]
            assert {t.role for t in update} == {"proposer", "solver"}
        stats = executor.stats()  # one warm pool served both roles, both updates and the iteration
        assert stats["pools"] == 1 and stats["finished"] == stats["started"] == len(stored)  # and still open
    finally:
        executor.close()

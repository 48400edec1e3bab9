"""RayExecutor on a real local Ray cluster (two simulated nodes), real bwrap kernels, real stores."""

from __future__ import annotations

import os
import pickle
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from workbench.agent.executor import make_jobs, run_jobs
from workbench.agent.local import LocalExecutor
from workbench.agent.recorder import Recorder
from workbench.cluster import RayExecutor, ToolsSpec
from workbench.kernel.procs import process_tree
from workbench.policies import ScriptedPolicy
from workbench.resolve import load_search_tool
from workbench.sandbox.kernel_dirs import kernel_dir_base
from workbench.store import Store
from workbench.worlds.scripted.solver import world_solver

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("ray")]


def search_spec(corpus_path) -> ToolsSpec:
    return ToolsSpec("workbench.resolve:load_search_tool", corpus=str(corpus_path))


def workers_spec(workers):
    return workers.tools["keyed"]


def essence(traj):
    """What must not depend on where an episode ran."""
    return {
        "task": traj.task.id,
        "termination": traj.termination,
        "answer": traj.final_answer,
        "steps": [
            (s.code, s.observation_text, [(c.name, c.arguments, c.result, c.error) for c in s.host_calls], s.notepad)
            for s in traj.steps
        ],
    }


@pytest.fixture(scope="module")
def workers(ray_cluster, corpus_path):
    """Two kernel workers spread over the two nodes (one each), shared by the tests that do not kill
    them; each has two kernels at 0.25 CPU, so half of each node stays free for other executors."""
    from tests.cluster.toolkit import SECRET_VAR
    from workbench.cluster import RayWorkers

    tools = {
        "default": search_spec(corpus_path),
        "keyed": ToolsSpec("tests.cluster.toolkit:keyed_tools", env={"api_key": SECRET_VAR}),
    }
    started = RayWorkers.start(tools, workers=2, kernels_per_worker=2, cpus_per_kernel=0.25, strategy="STRICT_SPREAD")
    yield started
    started.shutdown()


def test_local_and_ray_in_both_modes_give_identical_trajectories(workers, tasks, corpus_path, agent_config, tmp_path):
    jobs = make_jobs(tasks, agent_config)
    local = LocalExecutor(load_search_tool(corpus=corpus_path), concurrency=2)
    try:
        expected = run_jobs(local, jobs, world_solver())
    finally:
        local.close()
    assert all(t.termination == "submitted" for t in expected), [(t.termination, t.error) for t in expected]

    episodes = 0
    for mode, policy in (("env", world_solver()), ("episode", "scripted:world")):
        executor = RayExecutor(None, mode=mode, workers=workers)
        with Store(tmp_path / mode) as store:
            got = run_jobs(executor, make_jobs(tasks, agent_config), policy, Recorder(store))
            stored = {t.id: t for t in store.iter_trajectories()}
        stats = executor.stats()
        assert [essence(t) for t in got] == [essence(t) for t in expected], mode
        assert set(stored) == {t.id for t in got}  # written once each, by the driver
        assert stats["finished"] == len(tasks) and stats["worker_died"] == 0
        for w in stats["workers"]:  # never more episodes in flight on a worker than it has kernels
            assert w["high_water"] <= 2 and w["driver_high_water"] <= 2, w
        episodes += len(tasks)
        assert sum(w["episodes"] for w in stats["workers"]) == episodes
        # spread placement: one worker per node, and each trajectory names the node and worker that ran it
        nodes = {w["worker"]: w["node"] for w in stats["workers"]}
        assert len(set(nodes.values())) == 2
        assert {t.lineage["worker"]["worker"] for t in got} == {"worker-0", "worker-1"}
        assert all(t.lineage["worker"]["node"] == nodes[t.lineage["worker"]["worker"]] for t in got)


def slow_solver(seconds: float) -> ScriptedPolicy:
    """Two turns: a sleep (so the batch is still running when a worker is killed), then submit."""
    return ScriptedPolicy.from_turns(
        [
            f"<think>wait</think>\n<code>\nimport time; time.sleep({seconds})\n</code>",
            "<think>done</think>\n<code>\nsubmit_final_answer('x')\n</code>",
        ]
    )


def wait_gone(pids, seconds=8.0):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        left = [p for p in pids if os.path.exists(f"/proc/{p}")]
        if not left:
            return []
        time.sleep(0.2)
    return left


def test_killed_worker_mid_batch_retries_then_worker_died_and_leaves_no_kernel(ray_cluster, tasks, agent_config):
    import asyncio

    from workbench.agent.executor import gather_jobs
    from workbench.kernel.sync import run_sync

    ray, _ = ray_cluster
    executor = RayExecutor(None, workers=2, kernels_per_worker=2, cpus_per_kernel=0, strategy=None, retries=1).start()

    workers = {w.name: w for w in executor.workers.workers}
    victims: dict[str, set[int]] = {}

    def kill(name: str) -> None:
        victims[name] = set(process_tree(workers[name].info["pid"]))  # the actor, kernels, sandboxes
        ray.kill(workers[name].handle)

    def batch_killing(name: str, after: float):
        async def go():
            killer = asyncio.get_running_loop().call_later(after, kill, name)
            try:
                return await gather_jobs(executor, make_jobs(tasks[:4], agent_config), slow_solver(3.0))
            finally:
                killer.cancel()

        return run_sync(go())

    try:
        # worker-0 dies mid-batch (every episode is in its 3 s first step): its episodes start again on worker-1
        first = batch_killing("worker-0", after=1.5)
        assert [t.termination for t in first] == ["submitted"] * 4, [(t.termination, t.error) for t in first]
        assert [t.lineage["worker"]["worker"] for t in first] == ["worker-1"] * 4
        assert executor.retried == 2 and executor.worker_died == 0
        assert len(victims["worker-0"]) > 4  # it held sandboxes when it died
        assert wait_gone(victims["worker-0"]) == []  # none of them outlives it
        assert not (kernel_dir_base() / f"workbench-rollouts-{workers['worker-0'].info['pid']}").exists()
        # the last worker dies mid-batch: nothing is left to retry on
        second = batch_killing("worker-1", after=1.5)
        assert len(second) == 4 and {t.termination for t in second} == {"worker_died"}
        assert all("worker-1" in t.error and "died" in t.error for t in second)
        assert wait_gone(victims["worker-1"]) == []
        rows = executor.stats()["workers"]
        assert [w["alive"] for w in rows] == [False, False]
    finally:
        executor.close()


def test_tool_secrets_come_from_the_workers_environment_and_are_never_recorded(workers, tasks, tmp_path):
    from tests.cluster.toolkit import SECRET, SECRET_VAR
    from workbench.agent.config import AgentConfig
    from workbench.errors import ConfigError

    with pytest.raises(ConfigError, match="env="):
        ToolsSpec("tests.cluster.toolkit:keyed_tools", api_key=SECRET)
    spec = ToolsSpec("tests.cluster.toolkit:keyed_tools", env={"api_key": SECRET_VAR})
    assert SECRET.encode() not in pickle.dumps(spec) and SECRET_VAR not in os.environ
    caller = ScriptedPolicy.from_turns(
        [
            "<think>look</think>\n<code>\nr = lookup('capital')\nprint(r)\n</code>",
            "<think>done</think>\n<code>\nsubmit_final_answer(r)\n</code>",
        ]
    )
    assert spec == workers_spec(workers)  # what the shared workers were built with
    executor = RayExecutor(None, workers=workers)
    with Store(tmp_path / "run") as store:
        [traj] = run_jobs(
            executor, make_jobs(tasks[:1], AgentConfig(max_steps=3), tools="keyed"), caller, Recorder(store)
        )
    import hashlib

    digest = hashlib.sha256(SECRET.encode()).hexdigest()[:12]
    assert traj.termination == "submitted" and traj.final_answer == f"capital: ok (key digest {digest})"
    for path in (tmp_path / "run").rglob("*"):
        if path.is_file():
            assert SECRET.encode() not in path.read_bytes(), path


def test_grpo_step_with_rollouts_through_ray(workers, tmp_path):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from workbench.agent.config import AgentConfig
    from workbench.models.tiny import build_tiny_model, sample_texts
    from workbench.train.config import TrainConfig
    from workbench.train.run import NBAgentEpisodes
    from workbench.train.trainer import WorkbenchGRPOTrainer
    from workbench.trajectory import Task

    model_dir = build_tiny_model(
        tmp_path / "tiny", sample_texts(40), vocab_size=320, n_layer=2, n_embd=32, n_head=2, max_positions=1024, seed=0
    )
    model, tok = AutoModelForCausalLM.from_pretrained(model_dir), AutoTokenizer.from_pretrained(model_dir)
    tasks = [
        Task(id=f"t{i}", question=f"What is the capital of {c}?", golden_answers=[a], metadata={"hops": 1})
        for i, (c, a) in enumerate([("France", "Paris"), ("Italy", "Rome")])
    ]
    executor = RayExecutor(None, mode="env", workers=workers)
    episodes = NBAgentEpisodes(
        agent_config=AgentConfig(max_steps=2, max_new_tokens=16, prompt="compact", max_context_tokens=1024, seed=0),
        executor=executor,
    )
    cfg = TrainConfig(
        output_dir=str(tmp_path / "out"),
        num_generations=2,
        per_device_train_batch_size=4,
        max_steps=1,
        learning_rate=1e-2,
        max_completion_length=64,
    )
    torch.manual_seed(0)
    spread = lambda traj: {"total": len(set(traj.steps[0].completion_ids)) / 16 if traj.steps else 0.0}  # noqa: E731
    trainer = WorkbenchGRPOTrainer(model, tok, tasks, episodes=episodes, config=cfg, reward=spread)
    before = {k: v.detach().clone() for k, v in model.named_parameters()}
    trainer.train()
    assert trainer.state.global_step == 1
    assert any(not torch.equal(before[k], v) for k, v in model.named_parameters())
    trajs = trainer.last_trajectories
    assert len(trajs) == 4 and all(t.steps and t.lineage["worker"]["worker"] in ("worker-0", "worker-1") for t in trajs)
    assert all(t.lineage["policy"]["backend"] == "transformers" for t in trajs), trajs[0].lineage  # the trainer's model


@pytest.fixture(scope="module")
def env_pair(ray_cluster, workers, tasks):
    """One open environment on a Ray worker and one on an in-process `EnvHost`, for the same job."""
    from workbench.agent.config import AgentConfig
    from workbench.cluster.host import EnvHost
    from workbench.kernel.sync import run_sync

    ray, _ = ray_cluster
    [job] = make_jobs(tasks[:1], AgentConfig(output_cap=400))
    handle = workers.workers[0].handle
    from workbench.tools import ToolRegistry

    local = EnvHost({"default": ToolRegistry([])}, kernels=1)
    ray.get(handle.open.remote(job))
    run_sync(local.start())
    run_sync(local.open(job))

    def step(code: str):
        remote = ray.get(handle.step.remote(job.id, code, 20.0))
        here = run_sync(local.step(job.id, code, 20.0))
        return remote, here

    yield step
    ray.get(handle.close.remote(job.id))
    run_sync(local.shutdown())


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.text(max_size=300))
def test_any_text_crosses_the_worker_boundary_as_it_does_in_process(env_pair, text):
    for code in (f"print({text!r})", text):  # printed text, and the text itself run as code
        remote, here = env_pair(code)
        where = {"duration_s": 0, "full_output_path": None}  # timing, and each side's own rollout dir
        assert remote.observation.to_dict() | where == here.observation.to_dict() | where
        assert (remote.host_calls, remote.final_answer) == (here.host_calls, here.final_answer)


def test_run_and_eval_commands_take_executor_ray(ray_cluster, world, tmp_path, capsys):
    from workbench.cli import main

    _, cluster = ray_cluster
    saved = world.save(tmp_path / "world")  # tasks with their corpus beside them, found by the workers too
    ray_flags = ["--executor", "ray", "--ray-address", cluster.address, "--concurrency", "1"]
    assert (
        main(
            [
                "run",
                "--tasks",
                str(saved / "qa_test.jsonl"),
                "--policy",
                "scripted:world",
                "--limit",
                "2",
                "--max-steps",
                "6",
                "--out",
                str(tmp_path / "run"),
                *ray_flags,
            ]
        )
        == 0
    )
    assert (
        main(
            [
                "eval",
                "--dataset",
                str(saved / "qa_test.jsonl"),
                "--policy",
                "scripted:world",
                "--limit",
                "2",
                "--out",
                str(tmp_path / "eval"),
                *ray_flags,
                "--ray-mode",
                "episode",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "2 episodes, 2 submitted an answer" in out
    for run in ("run", "eval"):
        with Store(tmp_path / run) as store:
            trajs = list(store.iter_trajectories())
        assert len(trajs) == 2 and all(t.termination == "submitted" and t.lineage["worker"]["node"] for t in trajs)


def test_two_batches_at_once_share_the_workers_within_their_kernels(workers, tasks):
    import asyncio

    from workbench.agent.config import AgentConfig
    from workbench.agent.executor import gather_jobs
    from workbench.kernel.sync import run_sync

    quick = ScriptedPolicy.from_turns(["<think>go</think>\n<code>\nsubmit_final_answer(task[:8])\n</code>"])
    executor = RayExecutor(None, workers=workers)
    before = {w.name: w.high_water for w in workers.workers}

    async def both():
        jobs = lambda: make_jobs((tasks * 2)[:5], AgentConfig(max_steps=2))  # noqa: E731
        return await asyncio.gather(gather_jobs(executor, jobs(), quick), gather_jobs(executor, jobs(), quick))

    first, second = run_sync(both())
    assert [t.termination for t in first + second] == ["submitted"] * 10
    assert all(w.high_water <= 2 and w.in_flight == 0 for w in workers.workers), before
    stats = executor.stats()  # both batches together kept all four kernels busy, never more
    assert stats["high_water"] == 4 and stats["started"] == stats["finished"] == 10


def test_workers_and_their_kernels_run_at_default_niceness(workers, tasks, agent_config):
    """Ray starts workers at niceness 15; as root the actor takes back 0, and so do its kernels."""
    import ray

    if os.geteuid() != 0:
        pytest.skip("lowering niceness needs root or CAP_SYS_NICE")
    worker = workers.workers[0]
    assert ray.get(worker.handle.stats.remote())["nice"] == 0
    [job] = make_jobs(tasks[:1], agent_config)
    ray.get(worker.handle.open.remote(job))
    try:
        times = ray.get(
            worker.handle.kernel_round_trip.remote(job.id, "import os; os.getpriority(os.PRIO_PROCESS, 0)", 3)
        )
        assert len(times) == 3 and all(0 < t < 30 for t in times)
        obs = ray.get(
            worker.handle.step.remote(job.id, "import os; os.getpriority(os.PRIO_PROCESS, 0)", 30.0)
        ).observation
        assert obs.ok and obs.text.strip().endswith("0"), obs.text
    finally:
        ray.get(worker.handle.close.remote(job.id))

"""Asynchronous RL against the synchronous trainer, same model, tasks, steps and seed, in one run.

1. Latency-bound (ASearcher's case): each episode turn waits on a tool with long-tailed latency, one
   straggler per batch. Wall time async (k = 2) / sync for the same number of steps (target <= 0.7)
   and the trainer's idle share (time waiting for rollouts / wall) async / sync (target <= 0.5).
   Prints `async/sync wall: X` for scripts. The model here (`--latency-model`, 8 layers x 384) is one
   whose update is a sizeable share of a synchronous step, as in ASearcher's runs (both printed): with
   the 2-layer model's update of a few milliseconds the trainer waits whatever the schedule, and the
   idle share measures nothing but that.
2. CPU-bound: the same without tool latency (the tiny model generating on the trainer's cores): the
   ratio as measured, no target.
3. Overhead: async with k = 0 / sync on the CPU-bound run (target <= 1.1), and the weight sync's time
   per optimizer step (target <= 0.05, on the latency-bound model; the cpu-bound model's printed too: its
   update is so short that per-tensor bookkeeping, not bytes, sets the ratio). Also the update time with
   `prox="loglinear"` against the default recompute (no π_prox forward; AReaL reports 1.27x end to end).

    .venv/bin/python bench/bench_async.py [--steps 12] [--smoke]

The tool here is simulated (an `asyncio.sleep` per turn, seeded durations): what is measured is the
trainer's overlap of rollouts and updates, with real generation and real TRL steps.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent))
from _util import add_smoke_flag, figure, record

DOCS = ["Paris is the capital of France.", "Berlin is the capital of Germany.", "Rome is the capital of Italy."]


class ToolLatencyEpisodes:
    """Two-turn episodes: a model turn, then a tool that takes `latency(task, turn)` seconds (awaited,
    so other episodes run meanwhile), then the observation and a second model turn."""

    def __init__(self, latency, turn_tokens: int) -> None:
        self.latency, self.turn_tokens = latency, turn_tokens

    async def __call__(self, tasks, policy):
        return list(await asyncio.gather(*(self.episode(t, policy) for t in tasks)))

    async def episode(self, task, policy):
        from workbench.policies.base import SamplingParams
        from workbench.trajectory import Step, Trajectory

        traj = Trajectory(task=task)
        ctx = policy.codec.chat([{"role": "user", "content": task.question}])
        params = SamplingParams(max_new_tokens=self.turn_tokens, temperature=1.0)
        for turn in range(2):
            [out] = await policy.generate([ctx], params)
            step = Step(
                index=turn,
                raw=out.text,
                completion_ids=list(out.token_ids),
                logprobs=out.logprobs,
                finish_reason=out.finish_reason,
                policy_version=out.policy_version,
                prompt_ids=list(ctx) if turn == 0 else None,
            )
            traj.steps.append(step)
            ctx = ctx + step.completion_ids
            if turn == 0:
                await asyncio.sleep(self.latency(task, turn))
                step.observation_text = f" {DOCS[hash(task.id) % len(DOCS)]} "
                step.observation_ids = policy.codec.encode(step.observation_text)
                ctx = ctx + step.observation_ids
        traj.termination = "max_steps"
        return traj


def straggler_latency(base: float, straggler: float):
    """Long-tailed tool latency: most calls `base`·Exp(1), the first rollout of every 4th task `straggler`."""

    def latency(task, turn: int) -> float:
        index = int(task.id.removeprefix("q"))
        rng = random.Random(f"{task.id}:{turn}")
        return straggler if index % 4 == 0 else base * rng.expovariate(1.0)

    return latency


def spread(traj) -> dict[str, float]:
    ids = [i for s in traj.steps for i in s.completion_ids]
    return {"total": len(set(ids)) / max(len(ids), 1)}


def run(model_dir: Path, out: Path, steps: int, latency, turn_tokens: int, **async_kw) -> dict[str, float]:
    """One training run; wall time, the trainer's time waiting for rollouts, weight-sync and step times."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from workbench.train.config import TrainConfig
    from workbench.train.trainer import WorkbenchGRPOTrainer
    from workbench.trajectory import Task

    torch.manual_seed(0)
    tasks = [Task(id=f"q{i}", question=f"Where is item {i}?", golden_answers=["x"]) for i in range(32)]
    cfg = TrainConfig(
        output_dir=str(out),
        num_generations=2,
        per_device_train_batch_size=8,
        max_steps=steps,
        learning_rate=1e-4,
        max_completion_length=4 * turn_tokens,
        **async_kw,
    )
    trainer = WorkbenchGRPOTrainer(
        AutoModelForCausalLM.from_pretrained(model_dir),
        AutoTokenizer.from_pretrained(model_dir),
        tasks,
        episodes=ToolLatencyEpisodes(latency, turn_tokens),
        config=cfg,
        reward=spread,
    )
    waited: list[float] = []
    collect = trainer._collect

    def timed_collect(inputs):
        t0 = time.perf_counter()
        try:
            return collect(inputs)
        finally:
            waited.append(time.perf_counter() - t0)

    trainer._collect = timed_collect
    t0 = time.perf_counter()
    trainer.train()
    wall = time.perf_counter() - t0
    logs = trainer.state.log_history
    loads = [r["async/weight_sync_s"] for r in logs if "async/weight_sync_s" in r]
    copies = [r["async/weight_publish_s"] for r in logs if "async/weight_publish_s" in r]
    steps_s = [r["step_time"] for r in logs if "step_time" in r]
    updates = [s - w for s, w in zip(steps_s, waited, strict=False)]  # a step's time less its rollout wait
    return {
        "wall": wall,
        "idle": sum(waited) / wall,
        "sync_s": (statistics.median(loads) if loads else 0.0) + (statistics.median(copies) if copies else 0.0),
        "update_s": statistics.median(updates) if updates else 0.0,
        "wait_s": statistics.median(waited) if waited else 0.0,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument(
        "--steps", type=int, default=12, help="optimizer steps per run (fewer: the start-up wave weighs more)"
    )
    ap.add_argument(
        "--latency-model",
        type=lambda v: tuple(int(x) for x in v.split("x")),
        default=(8, 384),
        help="LAYERSxWIDTH of the latency-bound case's model (default 8x384: its update is a sizeable share of "
        "a step, as in ASearcher's runs, not the 2-layer model's few milliseconds)",
    )
    add_smoke_flag(ap)
    args = ap.parse_args()
    steps, tokens, base, slow = (2, 4, 0.01, 0.1) if args.smoke else (args.steps, 16, 0.2, 3.0)
    from workbench.models.tiny import build_tiny_model

    def model(path: Path, layers: int, width: int) -> Path:
        return build_tiny_model(
            path, DOCS * 16, vocab_size=300, n_layer=layers, n_embd=width, n_head=4, max_positions=512
        )

    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        layers, width = (1, 32) if args.smoke else (2, 64)
        wide_layers, wide = (1, 32) if args.smoke else args.latency_model
        model_dir = model(tmp / "m", layers, width)
        print(f"# {steps} steps of 4 groups of 2; seed 0; latency-bound on a {wide_layers}-layer {wide}-wide Qwen2;")
        print(f"# cpu-bound and overhead on a {layers}-layer {width}-wide one")
        lat = straggler_latency(base, slow)
        wide_dir = model(tmp / "w", wide_layers, wide)
        sync = run(wide_dir, tmp / "s", steps, lat, tokens)
        k2 = run(wide_dir, tmp / "a", steps, lat, tokens, async_rollouts=True, max_staleness=2)
        print(f"async/sync wall: {k2['wall'] / sync['wall']:.3f}")
        record("async/sync wall", k2["wall"] / sync["wall"], "x")
        figure("latency-bound: sync update (optimizer step less its wait)", sync["update_s"], "s")
        figure("latency-bound: sync rollout wait per step", sync["wait_s"], "s", baseline=sync["update_s"] or None)
        figure("latency-bound: sync wall", sync["wall"], "s")
        figure(
            "latency-bound: async k=2 wall",
            k2["wall"],
            "s",
            baseline=sync["wall"],
            target="<= 0.7",
            ok=k2["wall"] / sync["wall"] <= 0.7,
        )
        figure("latency-bound: sync trainer idle share", sync["idle"], "")
        figure(
            "latency-bound: async trainer idle share",
            k2["idle"],
            "",
            baseline=sync["idle"] or None,
            target="<= 0.5",
            ok=k2["idle"] <= 0.5 * sync["idle"],
        )
        none = lambda task, turn: 0.0  # noqa: E731
        cpu_sync = run(model_dir, tmp / "cs", steps, none, tokens)
        cpu_k2 = run(model_dir, tmp / "ca", steps, none, tokens, async_rollouts=True, max_staleness=2)
        cpu_k0 = run(model_dir, tmp / "c0", steps, none, tokens, async_rollouts=True, max_staleness=0)
        cpu_ll = run(model_dir, tmp / "cl", steps, none, tokens, async_rollouts=True, max_staleness=2, prox="loglinear")
        figure("cpu-bound: sync wall", cpu_sync["wall"], "s")
        figure("cpu-bound: async k=2 wall", cpu_k2["wall"], "s", baseline=cpu_sync["wall"])
        figure(
            "overhead: async k=0 wall",
            cpu_k0["wall"],
            "s",
            baseline=cpu_sync["wall"],
            target="<= 1.1",
            ok=cpu_k0["wall"] / cpu_sync["wall"] <= 1.1,
        )
        figure("cpu-bound: async k=2 update, prox=recompute", cpu_k2["update_s"], "s")
        figure(
            "cpu-bound: async k=2 update, prox=loglinear (no pi_prox forward)",
            cpu_ll["update_s"],
            "s",
            baseline=cpu_k2["update_s"] or None,
        )
        share = cpu_k0["sync_s"] / cpu_k0["update_s"] if cpu_k0["update_s"] else 0.0
        figure("overhead: weight sync / optimizer step, cpu-bound model", share, "")
        share = k2["sync_s"] / k2["update_s"] if k2["update_s"] else 0.0
        figure("overhead: weight sync / optimizer step", share, "", target="<= 0.05", ok=share <= 0.05)


if __name__ == "__main__":
    main()

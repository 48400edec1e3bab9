"""Proposer-phase cost of HRPO vs GRPO, in solver episodes per proposer update (Dr. Zero: about 1/4).

HRPO samples one question per prompt and baselines it against other prompts of the same hop count;
GRPO needs a group of G questions per prompt. Both run the same scripted iteration (same prompts,
n solver attempts per valid question) with real sandboxed kernels; the ratio is of measured counts.

    .venv/bin/python bench/bench_evolve.py --prompts 8 --group 4 --attempts 5
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from workbench.evolve import DrZeroConfig, run_drzero, sampling_world_solver, world_proposer
from workbench.search import BM25Retriever, Corpus
from workbench.worlds import make_world

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _util import add_smoke_flag, record


def measure(samples: int, args: argparse.Namespace, retriever: BM25Retriever) -> tuple[float, float]:
    with tempfile.TemporaryDirectory() as d:
        cfg = DrZeroConfig(
            run_dir=d,
            prompts_per_iteration=args.prompts,
            samples_per_prompt=samples,
            solver_attempts=args.attempts,
            concurrency=args.concurrency,
            progress=False,
            proposer_agent={"max_steps": 6, "max_context_tokens": 16384},
            solver_agent={"max_steps": 6, "max_context_tokens": 16384},
        )
        t0 = time.perf_counter()
        res = run_drzero(
            cfg,
            proposer_policy=world_proposer(noise=0.2),
            retriever=retriever,
            solver_policy=sampling_world_solver(noise=0.3),
        )
        return res.iterations[0].metrics["evolve/solver_episodes"], time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--prompts", type=int, default=8)
    ap.add_argument("--group", type=int, default=4, help="GRPO group size (questions per prompt)")
    ap.add_argument("--attempts", type=int, default=5)
    ap.add_argument("--concurrency", type=int, default=4)
    add_smoke_flag(ap)
    args = ap.parse_args()
    if args.smoke:
        args.prompts, args.group, args.attempts, args.concurrency = 2, 2, 2, 2
    world = make_world(0, "small")
    retriever = BM25Retriever.build(Corpus.from_rows(world.corpus()), show_progress=False)
    grpo, t_grpo = measure(args.group, args, retriever)
    hrpo, t_hrpo = measure(1, args, retriever)
    print(f"prompts={args.prompts} attempts={args.attempts} grpo_group={args.group}")
    print(f"GRPO (baseline): {grpo:.0f} solver episodes, {t_grpo:.1f} s")
    print(f"HRPO:            {hrpo:.0f} solver episodes, {t_hrpo:.1f} s")
    print(f"HRPO/GRPO solver episodes: {hrpo / max(grpo, 1):.2f}   wall time: {t_hrpo / max(t_grpo, 1e-9):.2f}")
    record("GRPO (baseline) solver episodes", grpo, "episodes")
    record("GRPO (baseline) wall time", t_grpo, "s")
    record("HRPO solver episodes", hrpo, "episodes", baseline=grpo)
    record("HRPO wall time", t_hrpo, "s", baseline=t_grpo)
    record("HRPO/GRPO solver episodes", hrpo / max(grpo, 1), "x")
    record("HRPO/GRPO wall time", t_hrpo / max(t_grpo, 1e-9), "x")


if __name__ == "__main__":
    main()

"""`bench_coevolution.py --hop`: issue 45's item 3 on the toy model, in a world tuned for it — both roles learning.

    .venv/bin/python bench/bench_coevolution.py --hop --run-dir runs/hop_coevolution    # the defaults
    .venv/bin/python bench/bench_coevolution.py --hop --check-prompts 24 --hrpo-steps 4   # smaller, faster
    .venv/bin/python bench/bench_coevolution.py --hop --smoke                           # every stage, toy sizes

Runs `workbench.demo.hop_coevolution` (its docstring: `make demo`'s tiny solver, the hop proposer, Dr. Zero
iterations with HRPO on the proposer and GRPO on the solver, then the two paired checks) with the demo's CPU
arithmetic pinned before torch loads (`bench_coevolution.py` sets `ARITHMETIC_ENV` first), so its solver stages
are `make demo`'s. Prints each stage's wall time, the load at start and end, and, last, for scripts:

    proposer difficulty: A -> B (change D [LO, HI])
    held-out accuracy: A% -> B% (change D [LO, HI])

Both are recorded, each with its 95% paired-bootstrap interval; the target of each is an interval above 0.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from _util import figure, record

SMOKE = {
    "preset": "fast",
    "iterations": 1,
    "prompts_per_iteration": 4,
    "solver_attempts": 2,
    "hrpo_steps": 1,
    "check_prompts": 4,
    "check_samples": 1,
}
SMOKE_PROPOSER = {"teacher_prompts": 8, "sft_epochs": 1, "hrpo_batch": 4, "hop_group": 2}


def add_hop_flags(ap: argparse.ArgumentParser) -> None:
    from workbench.demo.hop_coevolution import HopCoevolution

    ap.add_argument(
        "--check-prompts",
        type=int,
        default=HopCoevolution.check_prompts,
        help="--hop: fixed prompts of the proposer check (more narrow its interval)",
    )
    ap.add_argument(
        "--check-samples", type=int, default=HopCoevolution.check_samples, help="--hop: proposer samples per prompt"
    )
    ap.add_argument("--hrpo-steps", type=int, default=HopCoevolution.hrpo_steps, help="--hop: HRPO steps per iteration")
    ap.add_argument("--torch-threads", type=int, default=None, help="--hop: DemoConfig.torch_threads (default: 2)")


def run_hop(args: argparse.Namespace) -> None:
    from workbench.demo.hop_coevolution import HopCoevolution, run_hop_coevolution

    load0 = os.getloadavg()[0]
    proposer = dict(SMOKE_PROPOSER) if args.smoke else {}
    proposer["hrpo_lr"] = args.hrpo_lr
    sizes = dict(SMOKE) if args.smoke else {"iterations": args.iterations, "hrpo_steps": args.hrpo_steps}
    sizes.setdefault("check_prompts", args.check_prompts)
    sizes.setdefault("check_samples", args.check_samples)
    threads = {} if args.torch_threads is None else {"torch_threads": args.torch_threads}
    with tempfile.TemporaryDirectory() as tmp:
        run = HopCoevolution(
            run_dir=args.run_dir or str(Path(tmp) / "hop"),
            seed=args.seed,
            proposer=proposer,
            overrides=threads,
            **sizes,
        )
        say = lambda line: print(line, flush=True)  # noqa: E731
        t0 = time.perf_counter()
        result = run_hop_coevolution(run, out=say)
        wall = time.perf_counter() - t0
    print(f"load (1-min average) at start {load0:.1f}, at end {os.getloadavg()[0]:.1f}, on {os.cpu_count()} cores")
    tag = f" [seed {run.seed}, {run.hrpo_steps} HRPO steps, check {run.check_prompts}x{run.check_samples}]"
    figure("hop co-evolution wall time" + tag, wall, "s")
    p, h = result.proposer, result.heldout
    mean = lambda v: sum(v) / max(len(v), 1)  # noqa: E731
    record("hop proposer difficulty, first weights (baseline)" + tag, mean(p.first), "reward")
    record("hop proposer difficulty, last weights" + tag, mean(p.last), "reward", baseline=mean(p.first))
    record("hop proposer difficulty change" + tag, p.change, "reward", target="95% interval above 0", ok=p.low > 0)
    record("hop proposer difficulty change, 95% low" + tag, p.low, "reward")
    record("hop proposer difficulty change, 95% high" + tag, p.high, "reward")
    record("hop held-out accuracy after SFT (baseline)" + tag, mean(h.first), "share")
    record("hop held-out accuracy after RL" + tag, mean(h.last), "share", baseline=mean(h.first))
    record("hop held-out accuracy change" + tag, h.change, "share", target="95% interval above 0", ok=h.low > 0)
    record("hop held-out accuracy change, 95% low" + tag, h.low, "share")
    record("hop held-out accuracy change, 95% high" + tag, h.high, "share")
    print(p.line())
    print(h.line(), flush=True)

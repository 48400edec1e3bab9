"""Co-evolution checks (issue 45): the mechanism (item 1, `--oracle`), the Day-1 band gate (item 2, `--band`) and
both roles learning on the toy model in a world tuned for it (item 3's fallback, `--hop`).

    .venv/bin/python bench/bench_coevolution.py --oracle            # the full check (target: <= 10 min idle)
    .venv/bin/python bench/bench_coevolution.py --oracle --smoke    # every stage at toy size, seconds
    .venv/bin/python bench/bench_coevolution.py --band              # SmolLM2 after SFT: 16 questions, n = 5
    .venv/bin/python bench/bench_coevolution.py --band --smoke      # the toy model, 3 questions, n = 2
    .venv/bin/python bench/bench_coevolution.py --hop               # make demo's solver + the hop proposer

`--band` is in `_band.py` beside this file, `--hop` in `_hop.py` (their docstrings: what each builds and prints).
Every mode runs with `make demo`'s CPU arithmetic (`workbench.demo.__main__.pin_arithmetic`, before torch loads).

The oracle answers a question right with a known probability by hop count (1 hop 0.95, 2 hops 0.5,
3 hops 0.05, 4 hops 0: `workbench.evolve.oracle`), so Dr. Zero's difficulty reward 1(0<k<n)·(n−k)/(n−1)
is large only for two-hop questions; the proposer (a tiny Qwen2 SFT'd on a hop-by-hop teacher,
`workbench.evolve.hop_proposer`) chooses how many hops to take. The baseline is the same proposer before
HRPO, on the same fixed prompts with the same sampling seeds; the interval is a seeded paired bootstrap
over those prompts (`workbench.evolve.mechanism`). The last line, for scripts:

    oracle difficulty: A -> B (change D [LO, HI])

Also printed: the wall time of each stage, the CPU seconds of this process (not of the kernels), and the
machine's load at start and end (the 10-minute target is for an idle 2-core machine).
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

from workbench.demo.__main__ import pin_arithmetic

pin_arithmetic()  # before anything loads torch: the demo's stages train as `python -m workbench.demo` trains them
from workbench.evolve.mechanism import OracleCheck, run_oracle_check  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _band import add_band_flags, run_band  # noqa: E402
from _hop import add_hop_flags, run_hop  # noqa: E402
from _util import add_smoke_flag, figure, record  # noqa: E402

SMOKE = {
    "teacher_prompts": 8,
    "sft_epochs": 1,
    "eval_prompts": 4,
    "eval_samples": 1,
    "iterations": 1,
    "prompts_per_iteration": 4,
    "hrpo_steps": 1,
    "hrpo_batch": 4,
    "hop_group": 2,
    "resamples": 1000,
    "n_embd": 64,
}
TARGET_S = 600.0


def cpu_seconds() -> float:
    """This process's user + system CPU seconds (the sandboxed kernels are not its waited-for children,
    so their CPU is not counted)."""
    me = resource.getrusage(resource.RUSAGE_SELF)
    return me.ru_utime + me.ru_stime


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--oracle", action="store_true", help="the oracle-solver check (the default mode)")
    ap.add_argument("--band", action="store_true", help="the Day-1 band gate on SmolLM2 after SFT (see _band.py)")
    ap.add_argument("--hop", action="store_true", help="both roles learning on the toy model (see _hop.py)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--run-dir", default="", help="keep the run's store here (default: a temporary folder)")
    ap.add_argument("--hrpo-lr", type=float, default=OracleCheck.hrpo_lr, help="HRPO learning rate")
    ap.add_argument("--iterations", type=int, default=OracleCheck.iterations, help="Dr. Zero iterations (HRPO)")
    add_smoke_flag(ap)
    add_band_flags(ap)
    add_hop_flags(ap)
    args = ap.parse_args()
    if args.band:
        run_band(args)
        return
    if args.hop:
        run_hop(args)
        return
    load0 = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        run_dir = args.run_dir or str(Path(tmp) / "oracle")
        sizes = SMOKE if args.smoke else {"iterations": args.iterations}
        cfg = OracleCheck(run_dir=run_dir, seed=args.seed, hrpo_lr=args.hrpo_lr, **sizes)
        t0 = time.perf_counter()
        result = run_oracle_check(cfg)
        wall = time.perf_counter() - t0
    me = cpu_seconds()
    load1 = os.getloadavg()[0]
    for stage, seconds in result.seconds.items():
        print(f"  {stage:<12} {seconds:8.1f} s")
    print(f"load (1-min average) at start {load0:.1f}, at end {load1:.1f}, on {os.cpu_count()} cores")
    idle = load0 < 1.5 and load1 < 1.5
    figure(
        "wall time",
        wall,
        "s",
        target=f"<= {TARGET_S:.0f} s on an idle 2-core machine",
        ok=wall <= TARGET_S if idle else None,
    )
    figure("CPU time, this process (kernels not counted)", me, "s")
    record("oracle difficulty before HRPO (baseline)", result.mean_before, "reward")
    record("oracle difficulty after HRPO", result.mean_after, "reward", baseline=result.mean_before)
    record("oracle difficulty change", result.change, "reward", target="95% interval above 0", ok=result.low > 0)
    record("oracle difficulty change, 95% low", result.low, "reward")
    record("oracle difficulty change, 95% high", result.high, "reward")
    print(f"valid questions by hop count: before {result.hops_before}, after {result.hops_after}")
    print(result.line(), flush=True)


if __name__ == "__main__":
    main()

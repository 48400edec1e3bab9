"""`python -m workbench.demo [--run-dir DIR] [--seed N] [--fresh] [--fast]`"""

from __future__ import annotations

import argparse
import os
import sys


def main(argv: list[str] | None = None) -> int:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    from workbench.demo import FAST, DemoConfig, run_demo

    parser = argparse.ArgumentParser(prog="python -m workbench.demo", description=__doc__)
    parser.add_argument("--run-dir", default="runs/demo")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--fresh", action="store_true", help="rebuild everything instead of using the cache")
    parser.add_argument("--fast", action="store_true", help="a smoke run: every stage, tiny sizes")
    parser.add_argument("--engine", choices=("transformers", "vllm"), default="transformers",
                        help="what generates RL rollouts and evaluations: the live model, or one in-process vLLM "
                             "engine synced with it (vLLM's CPU build on a CPU)")
    args = parser.parse_args(argv)
    cfg = DemoConfig(run_dir=args.run_dir, seed=args.seed, engine=args.engine, **(FAST if args.fast else {}))
    run_demo(cfg, fresh=args.fresh)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""`python -m workbench.demo [--run-dir DIR] [--seed N] [--fresh] [--fast] [--proposer scripted|learned]
[--model tiny|smollm2] [--compare-sft] [--set FIELD=VALUE ...] [--help-config]`"""

from __future__ import annotations

import argparse
import os
import sys

# One arithmetic on every x86-64 host with AVX2: ATen's vector kernels and oneDNN's JIT pick their code path by
# the newest vector unit present, and an AVX-512 path sums softmax, norms and reductions in another order, so two
# hosts of one instance type on different CPU generations would train different models from the same seed.
# Set before torch loads; a value already in the environment wins. MKL's BLAS is not pinned here: its only
# vendor-independent mode, MKL_CBWR=COMPATIBLE, ran matrix products of the demo's sizes ~2x slower (measured); set it
# yourself for bit-equal runs across CPU generations.
ARITHMETIC_ENV = {"ATEN_CPU_CAPABILITY": "avx2", "ONEDNN_MAX_CPU_ISA": "AVX2"}


def pin_arithmetic() -> None:
    for name, value in ARITHMETIC_ENV.items():
        os.environ.setdefault(name, value)


def main(argv: list[str] | None = None) -> int:
    pin_arithmetic()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    from workbench.config_args import add_config_arguments
    from workbench.demo import FAST, DemoConfig, run_demo

    parser = argparse.ArgumentParser(prog="python -m workbench.demo", description=__doc__)
    parser.add_argument("--run-dir", default=None, help="default runs/demo (runs/demo_learned with --proposer learned)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--fresh", action="store_true", help="rebuild everything instead of using the cache")
    parser.add_argument("--fast", action="store_true", help="a smoke run: every stage, tiny sizes")
    parser.add_argument(
        "--engine",
        choices=("transformers", "vllm"),
        default=None,
        help="what generates RL rollouts and evaluations: the live model, or one in-process vLLM "
        "engine synced with it (vLLM's CPU build on a CPU); default transformers, vllm with --model smollm2",
    )
    parser.add_argument(
        "--proposer",
        choices=("scripted", "learned"),
        default="scripted",
        help="learned: the proposer is a tiny model too (SFT on a code-style proposer teacher, then HRPO); "
        "with --model smollm2, a LoRA adapter of its own on the solver's base model, into runs/demo_smollm2_learned",
    )
    parser.add_argument(
        "--model",
        choices=("tiny", "smollm2"),
        default="tiny",
        help="smollm2: SmolLM2-135M-Instruct (embedded, converted once) instead of the tiny model, "
        "into runs/demo_smollm2",
    )
    parser.add_argument(
        "--compare-sft",
        action="store_true",
        help="with --model smollm2: time LoRA and full fine-tuning on a slice of the SFT data and exit",
    )
    add_config_arguments(parser, "workbench.demo.config:DemoConfig")
    args = parser.parse_args(argv)
    if args.model == "smollm2":
        return real_model_main(args)
    if args.compare_sft:
        parser.error("--compare-sft needs --model smollm2")
    if args.proposer == "learned":
        return learned_main(args)
    cfg = DemoConfig(
        run_dir=args.run_dir or "runs/demo",
        seed=args.seed,
        engine=args.engine or "transformers",
        **(FAST if args.fast else {}),
    ).with_overrides(args.overrides)
    run_demo(cfg, fresh=args.fresh)
    return 0


def learned_main(args: argparse.Namespace) -> int:
    """`--proposer learned`: Dr. Zero with both roles learning (`workbench.demo.learned`)."""
    from workbench.demo import DemoConfig
    from workbench.demo.config import FAST_LEARNED
    from workbench.demo.learned import run_learned_demo

    cfg = DemoConfig(run_dir=args.run_dir or "runs/demo_learned", seed=args.seed, **(FAST_LEARNED if args.fast else {}))
    cfg = cfg.with_overrides(args.overrides)
    run_learned_demo(cfg, fresh=args.fresh)
    return 0


def real_model_main(args: argparse.Namespace) -> int:
    """`--model smollm2`: SmolLM2-135M-Instruct learns to be an NB-Agent (`workbench.demo.real_model`); with
    `--proposer learned`, both roles learn, each a LoRA adapter on it (`workbench.demo.real_learned`)."""
    from workbench.demo import DemoConfig
    from workbench.demo.config import FAST_SMOLLM2, FAST_SMOLLM2_LEARNED, SMOLLM2, SMOLLM2_LEARNED

    learned = args.proposer == "learned"
    if learned and args.compare_sft:
        raise SystemExit("--compare-sft times the solver's SFT: run it without --proposer learned")
    if learned:
        preset = FAST_SMOLLM2_LEARNED if args.fast else SMOLLM2_LEARNED
    else:
        preset = FAST_SMOLLM2 if args.fast else SMOLLM2
    chosen = {
        "run_dir": args.run_dir or preset["run_dir"],
        "engine": args.engine or preset.get("engine", "transformers"),
    }
    cfg = DemoConfig(**{**preset, **chosen}, seed=args.seed)
    cfg = cfg.with_overrides(args.overrides)
    if args.compare_sft:
        from workbench.demo.sft_choice import compare_sft

        compare_sft(cfg, fresh=args.fresh)
        return 0
    if learned:
        from workbench.demo.real_learned import run_real_learned_demo

        run_real_learned_demo(cfg, fresh=args.fresh)
        return 0
    from workbench.demo.real_model import run_real_model_demo

    run_real_model_demo(cfg, fresh=args.fresh)
    return 0


if __name__ == "__main__":
    from workbench.allocator import reexec_with_tcmalloc
    from workbench.console import quiet_when_reader_leaves

    reexec_with_tcmalloc()  # training and vLLM's CPU build allocate faster under it

    sys.exit(quiet_when_reader_leaves(main))

"""`python -m workbench.demo [--run-dir DIR] [--seed N] [--fresh] [--fast] [--proposer scripted|learned]
[--model tiny|smollm2] [--mode drzero|agent0] [--compare-sft] [--set FIELD=VALUE ...] [--help-config]`"""

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
        "--mode",
        choices=("drzero", "agent0"),
        default="drzero",
        help="agent0: Agent0's self-evolution (curriculum reward from self-consistency, tool use and repetition; "
        "majority-vote pseudo-labels; ADPO on the solver for questions in the band 0.3 <= p <= 0.8), the variant's "
        "preset with 4 solver attempts a question (3 with --fast), into its run dir + _agent0 (runs/demo_agent0)",
    )
    parser.add_argument(
        "--compare-sft",
        action="store_true",
        help="with --model smollm2: time LoRA and full fine-tuning on a slice of the SFT data and exit",
    )
    add_config_arguments(parser, "workbench.demo.config:DemoConfig")
    args = parser.parse_args(argv)
    if args.compare_sft and args.model != "smollm2":
        parser.error("--compare-sft needs --model smollm2")
    if args.compare_sft and args.proposer == "learned":
        raise SystemExit("--compare-sft times the solver's SFT: run it without --proposer learned")
    return run_variant(args)


def run_variant(args: argparse.Namespace) -> int:
    """The variant the flags name (`--model`, `--proposer`, `--mode`), its preset (`--fast`: the smoke-run one), the
    command line's run dir, seed and engine, then `--set` changes."""
    from workbench.demo import DemoConfig, LearnedProposer, PretrainedModel, ScriptedProposer, TinyModel, run_demo
    from workbench.demo.config import preset_name

    pretrained, learned = args.model == "smollm2", args.proposer == "learned"
    name = preset_name("pretrained" if pretrained else "tiny", args.proposer, args.fast, args.mode)
    preset = DemoConfig.preset(name)
    chosen: dict[str, object] = {"run_dir": args.run_dir or preset.run_dir, "seed": args.seed}
    if pretrained or not learned:  # the tiny model's learned proposer generates through transformers only
        chosen["engine"] = args.engine or preset.engine
    cfg = DemoConfig.preset(name, **chosen)
    cfg = cfg.with_overrides(args.overrides)
    if args.compare_sft:
        from workbench.demo.models import compare_sft

        compare_sft(cfg, fresh=args.fresh)
        return 0
    if not pretrained and not learned:
        run_demo(cfg, fresh=args.fresh)  # make demo (--mode agent0: its Agent0 twin)
        return 0
    model = PretrainedModel() if pretrained else TinyModel()
    run_demo(cfg, fresh=args.fresh, model=model, proposer=LearnedProposer() if learned else ScriptedProposer())
    return 0


if __name__ == "__main__":
    from workbench.allocator import reexec_with_tcmalloc
    from workbench.console import quiet_when_reader_leaves

    reexec_with_tcmalloc()  # training and vLLM's CPU build allocate faster under it

    sys.exit(quiet_when_reader_leaves(main))

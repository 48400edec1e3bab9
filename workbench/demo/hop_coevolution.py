"""Both roles learning on the toy model, in a world tuned for it: the demo's tiny solver and the hop proposer.

    from workbench.demo.hop_coevolution import HopCoevolution, run_hop_coevolution

    result = run_hop_coevolution(HopCoevolution(run_dir="runs/hop_coevolution"))
    result.proposer.line()   # proposer difficulty: A -> B (change D [LO, HI])
    result.heldout.line()    # held-out accuracy: A% -> B% (change D [LO, HI])

Tuned how: `--proposer learned`'s code-style proposer must reproduce a ~470-token first cell before its one free
choice, and a tiny model sampled at temperature 1 rarely does (5 of 32 valid questions). The hop proposer
(`workbench.evolve.hop_proposer`) makes the same two decisions, which fact to follow and when to ask, in one-line
turns, so most of its questions are valid from the start and HRPO sees rewards that differ. Its questions have
the world's own form (`What is the <r_k> of … of the <r_1> of <START>?`), the form the solver's teacher solved.

1. the solver: the demo's tiny model, its teacher and SFT, held-out accuracy after SFT (`TinyModel`, cached as
   `make demo`'s stages are);
2. the proposer: a tiny Qwen2 of its own SFT'd on the hop teacher's episodes (`workbench.evolve.mechanism`);
3. Dr. Zero iterations against the live solver: HRPO on the proposer (the oracle check's settings, 8 steps an
   iteration), the QA set from the proposer's questions only, GRPO on the solver (the demo's settings);
4. held-out accuracy after RL, then the two checks of `workbench.demo.coevolution`: the proposer's first and last
   weights on the same prompts against the frozen first solver, and the held-out change, each paired.

From the shell: `python bench/bench_coevolution.py --hop` (flags for the check's size and HRPO's steps; figures
recorded). Called from Python, set the demo's arithmetic before torch loads for figures comparable with
`make demo`'s (`workbench.demo.__main__.ARITHMETIC_ENV`: `ATEN_CPU_CAPABILITY=avx2 ONEDNN_MAX_CPU_ISA=AVX2`,
which the bench sets): the SFT stage is sensitive to the CPU kernels' instruction set.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from workbench.demo.coevolution import HeldoutChange, ProposerCheck, RoleWeights, heldout_change, proposer_check
from workbench.demo.pipeline import Printer

if TYPE_CHECKING:
    from workbench.demo.pipeline import Stages
    from workbench.evolve.mechanism import OracleCheck

__all__ = ["HopCoevolution", "HopCoevolutionResult", "run_hop_coevolution"]


@dataclass
class HopCoevolution:
    """The run's sizes: the demo's solver preset and the hop proposer's (defaults: `make demo`'s solver)."""

    run_dir: str = "runs/hop_coevolution"
    preset: str = "default"  # the demo preset of the solver's stages and its GRPO settings
    seed: int = 0
    max_hops: int = 4
    iterations: int = 3
    prompts_per_iteration: int = 16
    solver_attempts: int = 5  # Dr. Zero's n
    hrpo_steps: int = 8  # per iteration; 4 (the oracle check's) left the proposer's change inside its interval
    check_prompts: int = 96  # 24 gave an interval of about ±0.11 around changes of 0.03-0.05
    check_samples: int = 2
    overrides: dict[str, Any] = field(default_factory=dict)  # more DemoConfig fields (the solver's side)
    proposer: dict[str, Any] = field(default_factory=dict)  # more OracleCheck fields (the hop proposer's SFT, HRPO)


@dataclass
class HopCoevolutionResult:
    proposer: ProposerCheck
    heldout: HeldoutChange
    evolution: list[dict[str, Any]]
    seconds: dict[str, float]


@dataclass
class _Proposer:
    model: Any
    tok: Any


def run_hop_coevolution(run: HopCoevolution, *, out: Printer = print) -> HopCoevolutionResult:
    """Steps 1–4 of the module docstring, each printed; the last two lines are the checks' lines."""
    from workbench.demo import DemoConfig
    from workbench.demo.models import TinyModel
    from workbench.demo.pipeline import Stages
    from workbench.demo.proposers import ScriptedProposer
    from workbench.demo.report import evolution_lines, hop_table
    from workbench.evolve import run_drzero
    from workbench.evolve.hop_proposer import hop_agent
    from workbench.evolve.mechanism import build_proposer

    fields = {"run_dir": run.run_dir, "seed": run.seed, "iterations": run.iterations, **run.overrides}
    cfg = DemoConfig.preset(run.preset, proposer_hop_weights={run.max_hops: 1.0}, **fields)
    st = Stages(cfg, out, False, model=TinyModel(), proposer=ScriptedProposer())
    solver = st.model.solver_stages(st)
    hop = _hop_settings(run, st)
    with st.timed("P. the hop proposer: its tokenizer and tiny Qwen2, SFT on the hop teacher's episodes"):
        proposer = _Proposer(*build_proposer(hop, st.world, st.retriever, out))
    kept = RoleWeights.keep(st, solver, proposer)
    config = st.drzero_config(
        "coevolution_check",
        prompts_per_iteration=run.prompts_per_iteration,
        samples_per_prompt=1,
        solver_attempts=run.solver_attempts,
        proposer_agent=hop_agent(temperature=hop.temperature, seed=cfg.seed),
    )
    with st.timed("3. Dr. Zero iterations: HRPO on the hop proposer, GRPO on the solver"):
        result = run_drzero(
            config,
            proposer_policy=st.policy(proposer.model, proposer.tok, "hop-proposer"),
            solver_policy=st.policy(solver.model, solver.tok, "demo-solver"),
            corpus=st.world.corpus(),
            retriever=st.retriever,
            train_fn=_train_fn(st, solver, proposer, hop),
        )
        rows = [{"iteration": it.iteration, "qa_size": it.qa_size, **it.metrics} for it in result.iterations]
        result.store.close()
        for line in evolution_lines(rows):
            out(line)
    with st.timed("4. held-out accuracy after RL (greedy)"):
        after = st.evaluate(solver.model, solver.tok, "eval_final")
        out(hop_table(after, solver.evals[0]))
    with st.timed("5. the checks: the proposer against the frozen first solver; the held-out change"):
        check = proposer_check(st, solver, proposer, kept, config, prompts=run.check_prompts, samples=run.check_samples)
        for line in check.chain_lines():
            out(line)
    held = heldout_change(st.run / "eval_sft", st.run / "eval_final", seed=cfg.seed)
    out(check.line())
    out(held.line())
    return HopCoevolutionResult(check, held, rows, dict(st.seconds))


def _hop_settings(run: HopCoevolution, st: Stages) -> OracleCheck:
    """The hop proposer's SFT and HRPO settings: the oracle check's, at this run's sizes, then `run.proposer`."""
    from workbench.evolve.mechanism import OracleCheck

    sizes = {"max_hops": run.max_hops, "iterations": run.iterations, "attempts": run.solver_attempts}
    base = {"run_dir": str(st.run / "proposer"), "seed": st.cfg.seed, "world_size": st.cfg.world_size}
    return OracleCheck(**{**base, **sizes, "hrpo_steps": run.hrpo_steps, **run.proposer})


def _train_fn(st: Any, solver: Any, proposer: _Proposer, hop: Any) -> Any:
    """HRPO on the proposer with the oracle check's settings, the demo's GRPO on the solver."""
    from workbench.demo.rl import demo_train_fn
    from workbench.evolve.mechanism import train_config
    from workbench.evolve.training import trl_train_fn

    solver_fn = demo_train_fn(solver.model, solver.tok, st.cfg, on_step=st.out)
    proposer_fn = trl_train_fn(train_config(hop), proposer=(proposer.model, proposer.tok))

    def train_fn(req: Any) -> Any:
        return solver_fn(req) if req.role == "solver" else proposer_fn(req)

    return train_fn

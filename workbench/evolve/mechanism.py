"""The co-evolution mechanism check: HRPO trains a tiny proposer against a frozen oracle solver, and its mean
difficulty reward on fixed prompts rises.

    from workbench.evolve.mechanism import OracleCheck, run_oracle_check

    result = run_oracle_check(OracleCheck(run_dir="runs/oracle"))
    print(result.line())    # oracle difficulty: 0.141 -> 0.286 (change +0.146 [+0.026, +0.276])

What it runs, all on the world `make_world(seed, world_size)` with real kernels and real search:

1. the proposer: a tiny Qwen2 (`workbench.models.tiny`) with a tokenizer trained on the world's passages, the
   proposer prompts and the hop proposer's turns (`workbench.evolve.hop_proposer`), SFT'd token-exact on
   the episodes of `hop_teacher`, which asks after 1..n hops about equally often;
2. before: the proposer's episodes on fixed prompts (`eval_prompts` × `eval_samples`, seeded), each valid
   question attempted `attempts` times by the `OracleSolver` and scored with Dr. Zero's proposer reward;
   a prompt's score is the mean difficulty `1(0<k<n)·(n−k)/(n−1)` of its samples (an invalid one scores 0);
3. Dr. Zero iterations (`run_drzero`) with the oracle as the frozen solver and `trl_train_fn` running HRPO
   on the proposer (`hrpo_steps` per iteration, rollouts scored 0.5·format + difficulty against the
   oracle's attempts); the solver has no model, so only the proposer learns;
4. after: the same prompts with the same sampling seeds; the change is paired by prompt and its 95%
   interval is a seeded percentile bootstrap over prompts (`workbench.evaluate.intervals.paired_change`).

The oracle passes one-hop questions 95% of the time, two-hop 50%, three-hop 5%, four-hop never
(`workbench.evolve.oracle`): only by asking after two hops does the proposer earn much difficulty.
Measured (seed 0, the defaults, `bench/bench_coevolution.py --oracle`, 342 s on the shared 2-core machine at
load 2.6 → 11.2): 0.141 → 0.286, change +0.146 [+0.026, +0.276]; the same seed gives the same line. What moved:
valid questions 36 → 46 of 48 (3 hops 17 → 26, 4 hops 4 → 10), 2-hop ones 10 → 9, so HRPO first taught the
proposer to finish its chains (a valid 3-hop question still earns 0.22) rather than to ask after two hops.
The step is fragile: at HRPO learning rate 6e-4 the proposer collapsed (no valid question after 12 steps:
−0.141), at 1e-4 the change was +0.115 [−0.010, +0.245], and 5 iterations at 3e-4 gave +0.125 [+0.000, +0.260].

Everything is recorded in one store under `run_dir`, which the `EvolutionDashboard` reads: the fixed prompts
before HRPO as iteration −1 and after it as iteration `iterations` (lineage `phase`: `oracle_eval_before` /
`oracle_eval_after`), the Dr. Zero iterations' HRPO rollouts and QA generation as iterations 0, 1, ….
"""

from __future__ import annotations

import random
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from workbench.evolve.hop_proposer import ASK_TURN, HOP_TURN, hop_agent, hop_teacher
from workbench.evolve.oracle import PASS_BY_HOPS, OracleSolver
from workbench.trajectory import Task

Printer = Callable[[str], None]


@dataclass
class OracleCheck:
    """The check's sizes (the defaults: the full check, about 10 minutes on an idle 2-core machine)."""

    run_dir: str = "runs/oracle_check"
    seed: int = 0
    world_size: str = "small"
    max_hops: int = 4  # every prompt allows up to this many hops
    pass_by_hops: dict[int, float] = field(default_factory=lambda: dict(PASS_BY_HOPS))
    attempts: int = 5  # oracle attempts per question (Dr. Zero's n)
    teacher_prompts: int = 48  # SFT episodes of the hop teacher
    sft_epochs: int = 6
    sft_lr: float = 5e-3
    eval_prompts: int = 24
    eval_samples: int = 2  # proposer episodes per eval prompt
    iterations: int = 3
    prompts_per_iteration: int = 16
    hrpo_steps: int = 4  # per iteration
    hrpo_batch: int = 8  # rollouts per HRPO step, one per prompt
    hop_group: int = 4  # prompts per HRPO group (all share the hop limit)
    hrpo_lr: float = 3e-4  # 6e-4 collapsed the proposer (no valid question after 12 steps); 1e-4 moved too little
    temperature: float = 1.0
    concurrency: int = 4
    vocab_size: int = 700
    n_layer: int = 2
    n_embd: int = 128
    n_head: int = 2
    resamples: int = 10_000


@dataclass
class OracleCheckResult:
    before: list[float]  # per eval prompt: mean difficulty of its samples
    after: list[float]
    change: float
    low: float
    high: float
    hops_before: dict[int, int]  # valid questions by hop count
    hops_after: dict[int, int]
    seconds: dict[str, float]

    @property
    def mean_before(self) -> float:
        return sum(self.before) / max(len(self.before), 1)

    @property
    def mean_after(self) -> float:
        return sum(self.after) / max(len(self.after), 1)

    def line(self) -> str:
        """`oracle difficulty: A -> B (change D [LO, HI])`, for scripts."""
        return (
            f"oracle difficulty: {self.mean_before:.3f} -> {self.mean_after:.3f} "
            f"(change {self.change:+.3f} [{self.low:+.3f}, {self.high:+.3f}])"
        )


def prompts(world: Any, n: int, max_hops: int, *, seed: str, iteration: int = -1) -> list[Task]:
    """`n` proposer prompts over distinct documents of `world`, each allowing up to `max_hops` hops."""
    from workbench.evolve.proposer import proposer_task, sample_documents

    docs = sample_documents(world.corpus(), n, random.Random(seed))
    return [proposer_task(d, max_hops, iteration=iteration, prompt_index=j) for j, d in enumerate(docs)]


def proposer_texts(world: Any, tasks: list[Task], max_hops: int) -> list[str]:
    """The proposer tokenizer's text: passages, prompts, the hop turns and the outputs they print."""
    from workbench.worlds.scripted.proposer import ENTITY_PHRASES

    texts = [p["contents"] for p in world.corpus()] + [t.question for t in tasks]
    texts += [HOP_TURN.format(i) for i in range(4)] * 20 + [ASK_TURN] * 20
    texts += [f"chain {k} of at most {max_hops} | options: {r}" for k in range(max_hops + 1) for r in ENTITY_PHRASES]
    return texts


def build_proposer(cfg: OracleCheck, world: Any, retriever: Any, out: Printer) -> tuple[Any, Any]:
    """The tiny proposer, SFT'd on the hop teacher's episodes (in its own codec, token-exact)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from workbench.agent import AgentConfig, NBAgent
    from workbench.evolve.proposer import proposer_tools
    from workbench.models.tiny import build_tiny_model
    from workbench.policies import TokenizerCodec
    from workbench.train.sft import sft

    tasks = prompts(world, cfg.teacher_prompts, cfg.max_hops, seed=f"oracle-teacher:{cfg.seed}")
    path = build_tiny_model(
        Path(cfg.run_dir) / "proposer0",
        proposer_texts(world, tasks, cfg.max_hops),
        vocab_size=cfg.vocab_size,
        n_layer=cfg.n_layer,
        n_embd=cfg.n_embd,
        n_head=cfg.n_head,
        seed=cfg.seed,
    )
    tok = AutoTokenizer.from_pretrained(path)
    model = AutoModelForCausalLM.from_pretrained(path)
    agent = NBAgent(
        hop_teacher(seed=cfg.seed, codec=TokenizerCodec(tok)),
        tools=proposer_tools(retriever),
        role="proposer",
        config=AgentConfig(**hop_agent(seed=cfg.seed)),
        concurrency=cfg.concurrency,
    )
    teacher = agent.run(tasks, progress=False)
    losses = sft(model, tok, teacher, epochs=cfg.sft_epochs, lr=cfg.sft_lr, seed=cfg.seed, progress=False)
    submitted = sum(t.termination == "submitted" for t in teacher)
    out(
        f"proposer: vocab {len(tok)}, {submitted} of {len(teacher)} teacher episodes submitted, "
        f"{len(losses)} SFT steps, loss {losses[0]:.3f} -> {losses[-1]:.3f}"
    )
    return model, tok


def score_prompts(
    phases: Any,
    mode: Any,
    policy: Any,
    oracle: OracleSolver,
    tasks: list[Task],
    cfg: OracleCheck,
    phase: str,
    iteration: int,
) -> tuple[list[float], dict[int, int]]:
    """Per prompt, the mean difficulty of its `eval_samples` proposer episodes (every valid question attempted);
    and how many valid questions each hop count got. The episodes are stored as iteration `iteration`."""
    from workbench.evolve.difficulty import prompt_difficulty

    scores = prompt_difficulty(
        phases,
        mode,
        policy,
        oracle,
        tasks,
        samples=cfg.eval_samples,
        attempts=cfg.attempts,
        phase=phase,
        iteration=iteration,
    )
    hops: dict[int, int] = defaultdict(int)
    for it in scores.items:
        if it.valid and it.proposal is not None:
            hops[oracle.hops_of(it.proposal.question) or 0] += 1
    return scores.per_prompt, dict(sorted(hops.items()))


def run_oracle_check(cfg: OracleCheck | None = None, *, out: Printer = print) -> OracleCheckResult:
    """Steps 1–4 of the module docstring; prints a line per step to `out`."""
    from workbench.evaluate.intervals import paired_change
    from workbench.evolve.loop import run_drzero
    from workbench.evolve.modes import drzero_mode
    from workbench.evolve.phases import Phases, evolve_executor
    from workbench.evolve.proposer import proposer_tools, solver_tools
    from workbench.evolve.training import trl_train_fn
    from workbench.policies import TransformersPolicy
    from workbench.search import BM25Retriever, Corpus
    from workbench.store import Store
    from workbench.worlds import make_world

    cfg = cfg or OracleCheck()
    seconds: dict[str, float] = {}
    t0 = time.monotonic()
    world = make_world(cfg.seed, cfg.world_size)
    retriever = BM25Retriever.build(Corpus.from_rows(world.corpus()), show_progress=False)
    model, tok = build_proposer(cfg, world, retriever, out)
    seconds["proposer"] = time.monotonic() - t0
    oracle = OracleSolver(world, pass_by_hops=cfg.pass_by_hops, seed=cfg.seed)
    dz = drzero_config(cfg)
    mode, store = drzero_mode(dz), Store(Path(cfg.run_dir))
    executor = evolve_executor(proposer_tools(retriever), solver_tools(retriever), cfg.concurrency)
    phases = Phases(executor, dz.agent_config("proposer"), dz.agent_config("solver"), store, dz.resolved_run_id)
    fixed = prompts(world, cfg.eval_prompts, cfg.max_hops, seed=f"oracle-eval:{cfg.seed}")
    policy = TransformersPolicy.from_model(model, tok, name="oracle-check-proposer")
    try:
        t0 = time.monotonic()
        before, hops_before = score_prompts(phases, mode, policy, oracle, fixed, cfg, "oracle_eval_before", -1)
        seconds["eval_before"] = time.monotonic() - t0
        out(f"before: mean difficulty {sum(before) / len(before):.3f}; valid questions by hop {hops_before}")
        t0 = time.monotonic()
        train_fn = trl_train_fn(train_config(cfg), proposer=(model, tok))
        run_drzero(
            dz,
            proposer_policy=policy,
            solver_policy=oracle,
            corpus=world.corpus(),
            retriever=retriever,
            store=store,
            train_fn=train_fn,
            executor=executor,
        )
        seconds["hrpo"] = time.monotonic() - t0
        t0 = time.monotonic()
        after, hops_after = score_prompts(phases, mode, policy, oracle, fixed, cfg, "oracle_eval_after", cfg.iterations)
        seconds["eval_after"] = time.monotonic() - t0
        out(f"after: mean difficulty {sum(after) / len(after):.3f}; valid questions by hop {hops_after}")
    finally:
        executor.close()
        store.close()
    change, low, high = paired_change(before, after, resamples=cfg.resamples, seed=cfg.seed)
    return OracleCheckResult(before, after, change, low, high, hops_before, hops_after, seconds)


def drzero_config(cfg: OracleCheck) -> Any:
    """The Dr. Zero iterations of step 3: hop-proposer episodes, one-turn oracle attempts, HRPO only."""
    from workbench.evolve.config import DrZeroConfig

    return DrZeroConfig(
        run_dir=cfg.run_dir,
        iterations=cfg.iterations,
        prompts_per_iteration=cfg.prompts_per_iteration,
        samples_per_prompt=1,
        hop_weights={cfg.max_hops: 1.0},
        solver_attempts=cfg.attempts,
        concurrency=cfg.concurrency,
        seed=cfg.seed,
        proposer_agent=hop_agent(temperature=cfg.temperature, seed=cfg.seed),
        solver_agent={"max_steps": 1, "prompt": "compact", "seed": cfg.seed},
        progress=False,
    )


def train_config(cfg: OracleCheck) -> Any:
    """HRPO on the proposer: `hrpo_batch` rollouts a step in groups of `hop_group` same-hop prompts."""
    from workbench.train import TrainConfig

    return TrainConfig(
        max_steps=cfg.hrpo_steps,
        num_generations=cfg.hop_group,
        per_device_train_batch_size=cfg.hrpo_batch,
        learning_rate=cfg.hrpo_lr,
        temperature=cfg.temperature,
        max_turns=hop_agent()["max_steps"],
        max_turn_tokens=hop_agent()["max_new_tokens"],
        max_completion_length=1024,
        concurrency=cfg.concurrency,
        seed=cfg.seed,
        report_to=[],
    )


__all__ = ["OracleCheck", "OracleCheckResult", "build_proposer", "prompts", "run_oracle_check", "score_prompts"]

"""Self-evolution: a proposer writes questions, a solver answers them, both improve (Dr. Zero, Agent0).

    from workbench.evolve import DrZeroConfig, run_drzero, world_proposer
    from workbench.worlds import make_world
    from workbench.worlds.scripted.solver import world_solver

    world = make_world(0, "small")
    result = run_drzero(DrZeroConfig(run_dir="runs/dz", prompts_per_iteration=8, solver_attempts=5),
                        proposer_policy=world_proposer(noise=0.2), solver_policy=world_solver(noise=0.3),
                        corpus=world.corpus())
    store = result.store
    proposer = store.query(role="proposer").iloc[0]
    store.children(proposer.id)            # its solver attempts

Both roles are NB-Agent episodes in sandboxed kernels. The proposer searches with `search` and ends
with `submit_question(question, answer)`; its reward is recorded on its trajectory. Training hooks
(`train_fn`, e.g. `trl_train_fn`) update the proposer (HRPO / GRPO) and the solver (GRPO / ADPO).
`OracleSolver` is a frozen solver with a known pass probability per hop count; `run_oracle_check`
trains a tiny proposer against it with HRPO and reports the change in its difficulty reward.
"""

from workbench.evolve.config import Agent0Config, DrZeroConfig
from workbench.evolve.loop import run_agent0, run_drzero
from workbench.evolve.mechanism import OracleCheck, run_oracle_check
from workbench.evolve.oracle import OracleSolver
from workbench.evolve.phases import evolve_executor
from workbench.evolve.proposer import (
    Proposal,
    proposal_of,
    proposer_task,
    proposer_tools,
    sample_documents,
    sample_hops,
    solver_tools,
)
from workbench.evolve.scoring import format_components, in_band, majority_vote, uncertainty
from workbench.evolve.training import trl_train_fn
from workbench.worlds import load_qa  # an iteration's qa.jsonl is a QA file like any other
from workbench.worlds.scripted.proposer import sampling_world_solver, world_proposer

__all__ = [
    "Agent0Config",
    "DrZeroConfig",
    "OracleCheck",
    "OracleSolver",
    "Proposal",
    "evolve_executor",
    "format_components",
    "in_band",
    "load_qa",
    "majority_vote",
    "proposal_of",
    "proposer_task",
    "proposer_tools",
    "run_agent0",
    "run_drzero",
    "run_oracle_check",
    "sample_documents",
    "sample_hops",
    "sampling_world_solver",
    "solver_tools",
    "trl_train_fn",
    "uncertainty",
    "world_proposer",
]

"""The scripted agents: policies written as code, for demos, tests and SFT teachers (no model inside).

    world_solver()         # solver.py: searches each hop of a world's chain question, answers
    world_coder()          # coder.py: the same as generic notebook code (a plan in the notepad), the SFT teacher
    browsing_solver()      # browsing.py: solves by opening pages and following links (web tools)
    world_proposer()       # proposer.py: Dr. Zero's proposer, really searching the world for an n-hop question
    coder_proposer()       # coder_proposer.py: the proposer as generic code, the learned proposer's teacher

Each module answers `next_turn(context, ...)` with the next model turn. What they share is public here:
`PASSAGE_PATTERNS` (a relation's sentence in a world passage), `extract_fact`, `parse_chain_question`,
`seeded_chance` (a coin decided by a key), `ENTITY_PHRASES`/`PERSON_PHRASES` (relations that lead to an
entity / a person) and `FACT_PATTERNS` (the regexes the coders plant in the kernel).
"""

from workbench.worlds.scripted.browsing import browsing_solver
from workbench.worlds.scripted.coder import FACT_PATTERNS, world_coder
from workbench.worlds.scripted.coder_proposer import coder_proposer
from workbench.worlds.scripted.proposer import ENTITY_PHRASES, PERSON_PHRASES, sampling_world_solver, world_proposer
from workbench.worlds.scripted.solver import (
    PASSAGE_PATTERNS,
    extract_fact,
    parse_chain_question,
    seeded_chance,
    world_solver,
)

__all__ = [
    "ENTITY_PHRASES",
    "FACT_PATTERNS",
    "PASSAGE_PATTERNS",
    "PERSON_PHRASES",
    "browsing_solver",
    "coder_proposer",
    "extract_fact",
    "parse_chain_question",
    "sampling_world_solver",
    "seeded_chance",
    "world_coder",
    "world_proposer",
    "world_solver",
]

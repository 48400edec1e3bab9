"""`OracleSolver`: a frozen solver whose chance of answering a question right is known in advance.

    from workbench.evolve.oracle import OracleSolver
    from workbench.worlds import make_world

    oracle = OracleSolver(make_world(0, "small"), seed=0)          # pass probability by hop count
    oracle.pass_probability("Who is the director of Vel Orun?")    # 0.95: one hop
    run_drzero(cfg, proposer_policy=..., solver_policy=oracle, ...)  # one turn per attempt, in a real kernel

It is the scripted world solver with the noise made explicit: each attempt reads the task's chain question
(`What is the r_n of … of the r_1 of START?`), resolves it in the world it was given, and submits the right
value with probability `pass_by_hops[h]` (h = the question's hop count), else a wrong name drawn from the
world. A question that does not parse or does not resolve in the world is never answered right. The draw is
seeded by `(seed, question, the episode's sampling seed)`: the same seed gives the same attempts, and the n
attempts of one question (episodes with different sampling seeds) draw independently, so k of n is
Binomial(n, p) and the Dr. Zero difficulty reward `1(0<k<n)·(n−k)/(n−1)` has a known expectation
(`expected_difficulty`).

The default table puts the band at two hops. With n = 5 attempts (worked by hand from the binomial):

    hops  pass p  P(0<k<n)  E[difficulty]
    1     0.95    0.226     0.063   (mostly k = 4 of 5 right: (5−4)/4 = 0.25 when it happens)
    2     0.50    0.938     0.586   (= (5·1 + 10·0.75 + 10·0.5 + 5·0.25) / 32)
    3     0.05    0.226     0.220
    4     0.00    0         0       (never right: k = 0)

so a proposer that learns to ask two-hop questions raises its mean difficulty reward from about 0.22 (hop
counts 1–4 equally often) towards 0.59: the signal `workbench.evolve.mechanism` checks reaches its weights.
"""

from __future__ import annotations

import math
import random
import zlib
from collections.abc import Mapping
from typing import TYPE_CHECKING

from workbench.errors import ConfigError
from workbench.worlds.schema import RELATIONS
from workbench.worlds.scripted.proposer import SampledScript
from workbench.worlds.scripted.solver import parse_chain_question

if TYPE_CHECKING:
    from workbench.policies.base import Codec
    from workbench.worlds.world import World

PASS_BY_HOPS: dict[int, float] = {1: 0.95, 2: 0.5, 3: 0.05, 4: 0.0}
"""The default pass probability per hop count (more hops than listed: the last entry's)."""

SUBMIT_TURN = "<think>I know this one.</think>\n<code>\nsubmit_final_answer({!r})\n</code>"
UNKNOWN = "unknown"


def expected_difficulty(p: float, n: int) -> float:
    """E[1(0<k<n)·(n−k)/(n−1)] for k ~ Binomial(n, p): the mean difficulty reward of a question the
    solver answers right with probability `p` in each of `n` attempts."""
    if n < 2:
        raise ConfigError(f"n={n}: the difficulty reward compares attempts; use n >= 2")
    return sum(math.comb(n, k) * p**k * (1 - p) ** (n - k) * (n - k) / (n - 1) for k in range(1, n))


def resolve_chain(world: World, start: str, phrases: list[str]) -> str | None:
    """The value at the end of the chain `the phrases[-1] of … of the phrases[0] of start` in `world`, or
    None where an entity or a relation is missing."""
    try:
        entity = world.entity(start)
    except KeyError:
        return None
    value: str | None = None
    for i, phrase in enumerate(phrases):
        rel = next((r for r in RELATIONS.values() if r.subject == entity.type and r.phrase == phrase), None)
        if rel is None:
            return None
        value = world.lookup(entity.id, rel.name)
        if i + 1 < len(phrases):
            if rel.target is None:
                return None
            entity = world.entity(value)
    return value


class OracleSolver(SampledScript):
    """A scripted solver that answers a chain question right with a known probability (module docstring).

    `pass_by_hops` maps a hop count to that probability; a question with more hops than the table lists
    takes the largest listed hop count's (fewer than the smallest listed: 0). Its episodes must be seeded
    (`AgentConfig.seed`, which the self-evolution configs set): the sampling seed is what makes one
    question's attempts differ."""

    def __init__(
        self,
        world: World,
        *,
        pass_by_hops: Mapping[int, float] | None = None,
        seed: int = 0,
        codec: Codec | None = None,
        name: str = "oracle-solver",
    ) -> None:
        table = dict(PASS_BY_HOPS if pass_by_hops is None else pass_by_hops)
        if not table or any(int(h) < 1 or not 0.0 <= float(p) <= 1.0 for h, p in table.items()):
            raise ConfigError(
                f"pass_by_hops={table}: use hop counts >= 1 mapped to probabilities in [0, 1], e.g. {PASS_BY_HOPS}"
            )
        self.world = world
        self.pass_by_hops = {int(h): float(p) for h, p in sorted(table.items())}
        self.seed = seed
        super().__init__(lambda context, _turn, sample: self.turn(context, sample), codec=codec, name=name)

    def hops_of(self, question: str) -> int | None:
        """The hop count of a chain question, or None if it is not one."""
        parsed = parse_chain_question(f"Task: {question.strip()}")
        return len(parsed[1]) if parsed else None

    def pass_probability(self, question: str) -> float:
        """The chance that one attempt answers `question` right: 0 unless it resolves in the world."""
        parsed = parse_chain_question(f"Task: {question.strip()}")
        if parsed is None or resolve_chain(self.world, *parsed) is None:
            return 0.0
        return self._probability(len(parsed[1]))

    def answer(self, question: str, sample: object) -> str:
        """One attempt's answer to `question`, drawn with the sampling seed `sample`."""
        parsed = parse_chain_question(f"Task: {question.strip()}")
        return self.draw(*parsed, sample) if parsed else UNKNOWN

    def draw(self, start: str, phrases: list[str], sample: object) -> str:
        """The answer of one attempt at the chain (start, phrases), seeded by (seed, chain, sample)."""
        if sample is None:
            raise ConfigError(
                "OracleSolver needs seeded episodes (AgentConfig.seed): unseeded, all n attempts at a question "
                "would draw the same answer"
            )
        truth = resolve_chain(self.world, start, phrases)
        rng = random.Random(zlib.crc32(f"{self.seed}|{start}|{'/'.join(phrases)}|{sample}".encode()))
        if truth is not None and rng.random() < self._probability(len(phrases)):
            return truth
        wrong = [e.name for e in rng.sample(self.world.entities, 3) if e.name != truth]
        return wrong[0] if wrong else UNKNOWN

    def turn(self, context: str, sample: object) -> str:
        """The one turn of an attempt: submit the drawn answer to the task in `context`."""
        parsed = parse_chain_question(context)
        return SUBMIT_TURN.format(self.draw(*parsed, sample) if parsed else UNKNOWN)

    def _probability(self, hops: int) -> float:
        listed = [h for h in self.pass_by_hops if h <= hops]
        return self.pass_by_hops[max(listed)] if listed else 0.0


__all__ = ["PASS_BY_HOPS", "OracleSolver", "expected_difficulty", "resolve_chain"]

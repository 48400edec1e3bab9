"""A scripted proposer that writes n-hop questions with generic code: the learned proposer's teacher.

Where `scripted.world_proposer` copies entity names from the document and from search results into
its cells, this proposer's cells never name an entity or an answer. Its first cell (`PLAN_TURN`, the
same in every episode) reads the hop count and the source document from the notebook variable `task`,
and defines `hop(i)`, which follows option i: extracts the current entity's fact with the world's
sentence pattern, records it in the notepad, searches the value for the next hop, and, once the chain
has n facts (or cannot go on), composes the question and the answer from the chain and submits them.
Each cell prints the relations it may follow next (entity-valued ones before the last hop, none whose
value is already in the chain or in the question):

    hop 2 of 3 | options: birthplace, birth year

and every later turn is one line, `hop(i)`, i the index of one of those options (drawn from the
episode's sampling seed, like a sampled model; an index out of range prints the options again). So
the only thing a model that imitates it writes besides constant code is which fact to follow: the
decision HRPO can then shape. (Copying the relation's name instead was measured: a 2-layer model
after 186 SFT steps wrote a listed relation too rarely; an index is in range far more often.)

    policy = coder_proposer()          # plan cell, then hop(i) until the question is submitted
"""

from __future__ import annotations

import random
import re
import zlib

from workbench.policies.scripted import ScriptedPolicy
from workbench.worlds.scripted.coder import FACT_PATTERNS
from workbench.worlds.scripted.proposer import ENTITY_PHRASES, PERSON_PHRASES, SampledScript

PLAN_TURN = (
    "<think>Read the task and plan the chain.</think>\n<code>\nimport re\n"
    f"FACTS = {FACT_PATTERNS!r}\n"
    f"LINKS = {ENTITY_PHRASES!r}\n"
    "n = int(re.search(r'n = (\\d+)', task)[1])\n"
    "e, text = re.search(r'\\(Title: ([^)\\n]+)\\) (.*)', task).groups()\n"
    "q, k, seen = e, 0, {e}\n"
    "def fact(r):\n"
    "    m = re.search(FACTS[r].format(re.escape(e)), text)\n"
    "    return m and m[1].strip()\n"
    "def options():\n"
    "    return [r for r in FACTS if (k + 1 == n or r in LINKS) and (v := fact(r)) and v not in seen\n"
    "            and v.lower() not in q.lower()]\n"
    "def show():\n"
    "    print(f'hop {k + 1} of {n} | options:', ', '.join(options()))\n"
    "def hop(i):\n"
    "    global e, text, q, k\n"
    "    if not 0 <= i < len(options()):\n"
    "        return show()\n"
    "    r = options()[i]\n"
    "    notepad.add_fact(f'hop {k + 1}: the {r} of {e} is {fact(r)}')\n"
    "    e, q, k = fact(r), f'the {r} of {q}', k + 1\n"
    "    seen.add(e)\n"
    "    if k < n:\n"
    "        text = search(e, top_k=5)\n"
    "        if options():\n"
    "            return show()\n"
    f"    submit_question(f\"{{'Who' if r in {PERSON_PHRASES!r} else 'What'}} is {{q}}?\", e)\n"
    "show()\n</code>"
)
HOP_TURN = "<think>Follow one fact.</think>\n<code>\nhop({})\n</code>"
STUCK_TURN = "<think>No fact to follow.</think>\n<code>\nsubmit_question('', '')\n</code>"
_OPTIONS = re.compile(r"^hop \d+ of \d+ \| options: (.+)$", re.MULTILINE)


def next_turn(context: str, turn: int, *, seed: int = 0, sample: object = None) -> str:
    """Turn `turn` of the episode whose visible text is `context`: the plan cell first, then
    `hop(i)`, i the index of one of the options the newest output lists (drawn from seed and sample)."""
    if turn == 0:
        return PLAN_TURN
    listed = _OPTIONS.findall(context.rsplit("<output>", 1)[-1])
    if not listed:
        return STUCK_TURN
    options = [o.strip() for o in listed[-1].split(",") if o.strip()]
    rng = random.Random(zlib.crc32(f"{seed}|{sample}|{turn}|{listed[-1]}".encode()))
    return HOP_TURN.format(rng.randrange(len(options)))


def coder_proposer(*, seed: int = 0, codec=None, name: str = "coder-proposer") -> ScriptedPolicy:
    """The code-style proposer (module docstring). It needs the task in the notebook as `task`
    (`AgentConfig(task_variable="task")`, the default)."""
    return SampledScript(
        lambda context, turn, sample: next_turn(context, turn, seed=seed, sample=sample), codec=codec, name=name
    )


__all__ = ["HOP_TURN", "PLAN_TURN", "STUCK_TURN", "coder_proposer", "next_turn"]

"""A proposer that follows one fact per turn and decides when to ask: the mechanism check's proposer.

    from workbench.evolve.hop_proposer import hop_agent, hop_teacher

    cfg = DrZeroConfig(hop_weights={4: 1.0}, proposer_agent=hop_agent(), ...)   # prompts allow up to 4 hops
    run_drzero(cfg, proposer_policy=hop_teacher(seed=0), ...)                    # or a model SFT'd on it

Its kernel is prepared by `HOP_SETUP` (the agent's `task_setup`, run silently before the first turn): it reads
the hop limit n and the source document from the notebook variable `task` and defines two functions, so
every model turn is one short line:

- `hop(i)` follows option i of the current entity (an entity-valued relation: director, founder,
  headquarters, birthplace, country, capital), records the fact in the notepad, searches the value and prints
  where the chain stands, e.g. `chain 2 of at most 4 | options: birthplace`; the n-th hop, or a hop with
  nothing left to follow, asks at once. An index out of range prints the options again.
- `ask()` submits the chain so far as a question, `What is the <r_k> of … of the <r_1> of <START>?`, with its
  answer the last value (`submit_question`, which ends the episode).

So besides constant text a model that imitates `hop_teacher` makes two decisions, each one token of its
turn (the same think text either way): which fact to follow (`hop(i)`) and how many hops to take before
asking (`ask()`). The second is what the oracle solver's pass probability
(`workbench.evolve.oracle`) turns into a difficulty reward, and what HRPO can shape in minutes.
The teacher asks after k hops with probability 1/(n + 1 − k), so its hop counts are uniform over 1..n when
every chain can go on (an entity with nothing to follow asks early).
"""

from __future__ import annotations

import random
import re
import zlib
from typing import TYPE_CHECKING, Any

from workbench.worlds.scripted.coder import FACT_PATTERNS
from workbench.worlds.scripted.proposer import ENTITY_PHRASES, PERSON_PHRASES, SampledScript

if TYPE_CHECKING:
    from workbench.policies.base import Codec

HOP_SETUP = (
    "import re\n"
    f"FACTS = {FACT_PATTERNS!r}\n"
    f"LINKS = {ENTITY_PHRASES!r}\n"
    f"PERSONS = {PERSON_PHRASES!r}\n"
    "n = int(re.search(r'n = (\\d+)', task)[1])\n"
    "e, text = re.search(r'\\(Title: ([^)\\n]+)\\) (.*)', task).groups()\n"
    "q, k, seen, last = e, 0, {e}, None\n"
    "def fact(r):\n"
    "    m = re.search(FACTS[r].format(re.escape(e)), text)\n"
    "    return m and m[1].strip()\n"
    "def options():\n"
    "    return [r for r in LINKS if (v := fact(r)) and v not in seen and v.lower() not in q.lower()]\n"
    "def show():\n"
    "    print(f'chain {k} of at most {n} | options:', ', '.join(options()))\n"
    "def ask():\n"
    "    if k == 0:\n"
    "        return show()\n"
    "    submit_question(f\"{'Who' if last in PERSONS else 'What'} is {q}?\", e)\n"
    "def hop(i):\n"
    "    global e, text, q, k, last\n"
    "    if not 0 <= i < len(options()):\n"
    "        return show()\n"
    "    r = options()[i]\n"
    "    notepad.add_fact(f'hop {k + 1}: the {r} of {e} is {fact(r)}')\n"
    "    e, q, k, last = fact(r), f'the {r} of {q}', k + 1, r\n"
    "    seen.add(e)\n"
    "    if k == n:\n"
    "        return ask()\n"
    "    text = search(e, top_k=5)\n"
    "    if not options():\n"
    "        return ask()\n"
    "    show()\n"
)
"""The proposer kernel's setup (module docstring): `hop(i)`, `ask()` and the state they share."""

HOP_TURN = "<think>Next step.</think>\n<code>\nhop({})\n</code>"
ASK_TURN = "<think>Next step.</think>\n<code>\nask()\n</code>"
STUCK_TURN = "<think>No fact to follow.</think>\n<code>\nsubmit_question('', '')\n</code>"
_CHAIN = re.compile(r"^chain (\d+) of at most (\d+) \| options:(.*)$", re.MULTILINE)


def hop_agent(**update: Any) -> dict[str, Any]:
    """AgentConfig keywords of a hop-proposer episode: `HOP_SETUP` as the task setup, the compact prompt,
    room for n hops plus a few wasted turns (`update` overrides any)."""
    return {
        "task_setup": HOP_SETUP,
        "prompt": "compact",
        "max_steps": 7,
        "max_new_tokens": 64,
        "max_context_tokens": 4096,
        **update,
    }


def next_turn(context: str, turn: int, *, seed: int = 0, sample: object = None) -> str:
    """The teacher's turn `turn` in the episode whose visible text is `context` (module docstring)."""
    if turn == 0:
        return HOP_TURN.format(0)
    listed = _CHAIN.findall(context.rsplit("<output>", 1)[-1])
    if not listed:
        return STUCK_TURN
    done, limit, rest = listed[-1]
    options = [o.strip() for o in rest.split(",") if o.strip()]
    k, n = int(done), int(limit)
    if not options:
        return ASK_TURN if k else STUCK_TURN
    rng = random.Random(zlib.crc32(f"{seed}|{sample}|{turn}|{listed[-1]}".encode()))
    if k and rng.random() < 1 / (n + 1 - k):
        return ASK_TURN
    return HOP_TURN.format(rng.randrange(len(options)))


def hop_teacher(*, seed: int = 0, codec: Codec | None = None, name: str = "hop-teacher") -> SampledScript:
    """The scripted hop proposer (module docstring); its episodes need `hop_agent()`'s task setup."""
    return SampledScript(
        lambda context, turn, sample: next_turn(context, turn, seed=seed, sample=sample), codec=codec, name=name
    )


__all__ = ["ASK_TURN", "HOP_SETUP", "HOP_TURN", "hop_agent", "hop_teacher", "next_turn"]

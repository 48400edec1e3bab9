"""A scripted NB-Agent solver for synthetic-world questions: the demo and test policy.

It reads only the text the model would see (the task, the `<output>` blocks and the notepad), so it
survives context trimming the way a good model should: progress lives in notepad facts of the form
`the <relation> of <entity> is <value>`. Each turn it (1) reads the newest search output for the hop
it is on, (2) writes the fact to the notepad, and (3) searches the next hop or submits the answer.

    policy = world_solver()                         # or load_policy("scripted")
    policy = world_solver(noise=0.3, seed=1)        # sometimes copies a wrong name: SFT data with room to improve
    policy = world_solver(give_up=0.7)              # a short-horizon teacher: often answers after one hop

`noise` is the probability, per hop, of taking a distractor (another name in the same output)
instead of the right value; `give_up` the probability, per multi-hop question, of submitting the
first hop's value as the answer. Both are seeded per question, so runs are reproducible.
"""

from __future__ import annotations

import random
import re
import zlib

from workbench.policies.scripted import ScriptedPolicy

_Q = re.compile(r"Task: (?:What|Who) is the (.+)\?\s*$", re.MULTILINE)
_FACT = re.compile(r"the (.+?) of (.+?) is (.+?)\s*$", re.MULTILINE)
_NAME = r"([A-Z][\w'-]*(?: [A-Z][\w'-]*)*)"

# relation phrase -> pattern over a passage about ENTITY {e} with the value {name} (the world's passage templates)
PASSAGE_PATTERNS = {
    "director": r"{e} was directed by {name}\.",
    "release year": r"{e} is a [\w ]+ film released in (\d{{3,4}})\.",
    "founder": r"{e} is an organisation founded in \d+ by {name}\.",
    "headquarters": r"The headquarters of {e} are in {name}\.",
    "founding year": r"{e} is an organisation founded in (\d{{3,4}})",
    "birthplace": r"{e} was born in the city of {name}\.",
    "birth year": r"{e} is an? [\w ]+? born in (\d{{3,4}})\.",
    "occupation": r"{e} is an? ([\w ]+?) born in \d",
    "country": r"{e} is a city located in {name}\.",
    "capital": r"The capital of {e} is {name}\.",
}
"""Relation phrase -> the regex of its sentence in a passage about entity `{e}` with the value `{name}`."""


def parse_chain_question(context: str) -> tuple[str, list[str]] | None:
    """`What is the r_n of … of the r_1 of START?` → (START, [r_1, …, r_n])."""
    match = _Q.search(context)
    if not match:
        return None
    body = match.group(1)
    *outer, inner = body.split(" of the ")
    first, sep, start = inner.partition(" of ")
    if not sep:
        return None
    return start.strip(), [first, *outer[::-1]]


def extract_fact(output: str, entity: str, phrase: str) -> str | None:
    """The value of `phrase` for `entity` stated in `output`, if any."""
    template = PASSAGE_PATTERNS.get(phrase)
    if template is None:
        return None
    match = re.search(template.format(e=re.escape(entity), name=_NAME), output)
    return match.group(1).strip() if match else None


def next_turn(context: str, *, noise: float = 0.0, give_up: float = 0.0, seed: int | str = 0) -> str:
    """The solver's next turn for the episode whose visible text is `context`."""
    parsed = parse_chain_question(context)
    if parsed is None:
        return '<think>I cannot parse this task.</think>\n<code>\nsubmit_final_answer("unknown")\n</code>'
    start, phrases = parsed
    facts = {(p, e): v for p, e, v in _FACT.findall(context)}
    entity, hop = start, 0
    while hop < len(phrases) and (phrases[hop], entity) in facts:
        entity, hop = facts[(phrases[hop], entity)], hop + 1
    outputs = re.findall(r"<output>\n(.*?)\n</output>", context, re.DOTALL)
    lines: list[str] = []
    think: list[str] = []
    if hop == 0 and not outputs:
        plan = [f"find the {p}" for p in phrases]
        lines.append(f"notepad.add_todo({plan!r})")
        think.append(f"The task needs {len(phrases)} hop(s) starting from {start}.")
    elif hop < len(phrases) and outputs:
        value = extract_fact(outputs[-1], entity, phrases[hop])
        if value is not None:
            value = _maybe_distract(value, outputs[-1], noise, f"{seed}|{start}|{hop}")
            lines.append(f"notepad.add_fact({f'the {phrases[hop]} of {entity} is {value}'!r})")
            lines.append(f"notepad.update_todo({hop + 1}, 'done')")
            think.append(f"The {phrases[hop]} of {entity} is {value}.")
            entity, hop = value, hop + 1
            if hop < len(phrases) and seeded_chance(give_up, f"{seed}|{start}|give-up"):
                hop = len(phrases)  # a short-horizon teacher stops after the first hop
    if hop == len(phrases):
        think.append(f"So the answer is {entity}.")
        lines.append(f"submit_final_answer({entity!r})")
    else:
        query = f"{entity} {phrases[hop]}"
        think.append(f"Next I search for the {phrases[hop]} of {entity}.")
        lines += [f"r = search({query!r})", "print(r)"]
    return "<think>" + " ".join(think) + "</think>\n<code>\n" + "\n".join(lines) + "\n</code>"


def seeded_chance(p: float, key: str) -> bool:
    """True with probability `p`, decided by `key` alone (the same key always gives the same answer)."""
    return p > 0 and random.Random(zlib.crc32(key.encode())).random() < p


def _maybe_distract(value: str, output: str, noise: float, key: str) -> str:
    if not seeded_chance(noise, key):
        return value
    titles = [t for t in re.findall(r"\(Title: ([^)]+)\)", output) if t != value]
    return random.Random(zlib.crc32(key.encode()) + 1).choice(titles) if titles else value


def world_solver(
    *, noise: float = 0.0, give_up: float = 0.0, seed: int = 0, codec=None, name: str = "world-solver"
) -> ScriptedPolicy:
    """A ScriptedPolicy that solves synthetic-world questions with search + notepad."""
    knobs = ", ".join(f"{k}={v}" for k, v in (("noise", noise), ("give_up", give_up)) if v)
    return ScriptedPolicy(
        lambda context, _turn: next_turn(context, noise=noise, give_up=give_up, seed=seed),
        codec=codec,
        name=f"{name}({knobs})" if knobs else name,
    )


__all__ = ["PASSAGE_PATTERNS", "extract_fact", "next_turn", "parse_chain_question", "seeded_chance", "world_solver"]

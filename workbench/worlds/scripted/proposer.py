"""A scripted proposer for synthetic-world corpora: builds an n-hop question by really searching.

It reads only what a model would see (its task, the `<output>` blocks and the notepad). Turn k records
hop k+1 as a notepad fact `hop k+1: the <relation> of <entity> is <value>` (hop 1 read from the source
document, later hops from the passage its last search returned), then either searches the value it
just found or, after n-1 searches, submits `What is the r_n of ... the r_1 of <document entity>?` with
`submit_question`. Facts are read with the world's passage templates (`workbench.worlds.scripted.solver.extract_fact`).

    policy = world_proposer()                    # clean questions of the requested hop count
    policy = world_proposer(noise=0.3, seed=1)   # some prompts go wrong: one hop short, a rambling
                                                 # answer, or the answer leaked into the question
    solver = sampling_world_solver(noise=0.3)    # the world solver, with a fresh noise draw per episode

Noise is drawn once per prompt (seeded by seed, document title and hop count); which fact each hop
uses is drawn from the episode's sampling seed, like a sampled model, so repeated samples of one
prompt differ while a seeded run repeats exactly. Each draw is recorded in the notepad, so later
turns stay consistent with it.
"""

from __future__ import annotations

import random
import re
import zlib

from workbench.policies.base import Completion, SamplingParams
from workbench.policies.scripted import ScriptedPolicy
from workbench.worlds.scripted.solver import PASSAGE_PATTERNS, extract_fact
from workbench.worlds.scripted.solver import next_turn as solver_turn

ENTITY_PHRASES = ("director", "founder", "headquarters", "birthplace", "country", "capital")
"""Relations whose value is an entity, so a question can hop on from it."""
PERSON_PHRASES = ("director", "founder")
"""Relations whose value is a person (the question asks "Who")."""
NOISE_KINDS = ("short", "sloppy", "leak")

_HOPS = re.compile(r"\bn = (\d+)\b")
_DOC = re.compile(r"Source document:\n\(Title: ([^)\n]+)\) (.*)")
_FACT = re.compile(r"hop (\d+): the (.+?) of (.+?) is (.+?)(?:['\"]\)|\s*$)", re.MULTILINE)
_OUTPUT = re.compile(r"<output>\n(.*?)\n</output>", re.DOTALL)


def _passage(output: str, title: str) -> str | None:
    match = re.search(rf"^Doc \d+ \(Title: {re.escape(title)}\) (.*)$", output, re.MULTILINE)
    return match.group(1) if match else None


def _choose(text: str, entity: str, seen: set[str], need_entity: bool, rng: random.Random) -> tuple[str, str] | None:
    """A (phrase, value) stated about `entity` in `text`; entity-valued and unseen if the chain goes on."""
    options = []
    for phrase in PASSAGE_PATTERNS:
        value = extract_fact(text, entity, phrase)
        if value is None or value in seen or (need_entity and phrase not in ENTITY_PHRASES):
            continue
        options.append((phrase, value))
    return rng.choice(options) if options else None


def question_text(start: str, phrases: list[str]) -> str:
    """`What/Who is the r_n of ... of the r_1 of <start>?`, the world's question form."""
    np = start
    for phrase in phrases:
        np = f"the {phrase} of {np}"
    return f"{'Who' if phrases[-1] in PERSON_PHRASES else 'What'} is {np}?"


def next_turn(context: str, *, noise: float = 0.0, seed: int = 0, sample: object = None) -> str:
    """The proposer's next turn for the episode whose visible text is `context`."""
    hops_m, doc_m = _HOPS.search(context), _DOC.search(context)
    if not hops_m or not doc_m:
        return "<think>I cannot find the hop count or the source document.</think>\n<code>\nprint('stuck')\n</code>"
    hops, start, doc_text = int(hops_m.group(1)), doc_m.group(1).strip(), doc_m.group(2)
    key = f"{seed}|{start}|{hops}"
    rng = random.Random(zlib.crc32(key.encode()))
    kind = rng.choice(NOISE_KINDS) if rng.random() < noise else None
    target = hops - 1 if kind == "short" and hops > 1 else hops

    facts: dict[int, tuple[str, str, str]] = {}
    for k, phrase, entity, value in _FACT.findall(context):
        facts[int(k)] = (phrase, entity.strip(), value.strip())
    chain = [facts[k] for k in sorted(facts) if k <= target]
    seen = {start} | {v for _, _, v in chain}
    done = len(chain)
    entity = chain[-1][2] if chain else start
    text = doc_text if done == 0 else None
    if done:
        outputs = _OUTPUT.findall(context)
        text = _passage(outputs[-1], entity) if outputs else None
    think, lines = [], []
    step_rng = random.Random(zlib.crc32(f"{key}|{done}|{sample}".encode()))
    pick = None
    if done < target and text is not None:
        pick = _choose(text, entity, seen, done + 1 < target, step_rng)
    if pick is not None:
        phrase, value = pick
        chain.append((phrase, entity, value))
        think.append(f"Hop {done + 1}: the {phrase} of {entity} is {value}.")
        lines.append(f"notepad.add_fact({f'hop {done + 1}: the {phrase} of {entity} is {value}'!r})")
    elif done < target:
        think.append(f"I cannot continue the chain from {entity}; I stop at {done} hop(s).")
    if pick is not None and len(chain) < target:
        think.append(f"Next I search for {pick[1]}.")
        lines += [f"r = search({pick[1]!r}, top_k=5)", "print(r)"]
    elif chain:
        question, answer = question_text(start, [p for p, _, _ in chain]), chain[-1][2]
        if kind == "sloppy":
            answer = f"I believe the answer is probably {answer}, judging from what I read"
        elif kind == "leak":
            question = question[:-1] + f" (it is {answer})?"
        think.append(f"The chain has {len(chain)} hop(s); the answer is {chain[-1][2]}.")
        lines.append(f"submit_question({question!r}, {answer!r})")
    else:
        think.append("The document states nothing I can build on.")
        lines.append("submit_question('', '')")
    return "<think>" + " ".join(think) + "</think>\n<code>\n" + "\n".join(lines) + "\n</code>"


class SampledScript(ScriptedPolicy):
    """A ScriptedPolicy whose function also gets the turn's sampling seed: `fn(context, turn, seed)`."""

    def __init__(self, fn, **kwargs) -> None:
        self._sample_seed: int | None = None
        super().__init__(lambda context, turn: fn(context, turn, self._sample_seed), **kwargs)

    def complete(self, prompt, params: SamplingParams) -> Completion:
        self._sample_seed = params.seed  # set and used within this synchronous call
        return super().complete(prompt, params)


def _check_noise(noise: float) -> None:
    if not 0.0 <= noise <= 1.0:
        from workbench.errors import ConfigError

        raise ConfigError(f"noise={noise}: use a probability between 0 and 1")


def world_proposer(*, noise: float = 0.0, seed: int = 0, codec=None, name: str = "world-proposer") -> ScriptedPolicy:
    """A scripted policy that proposes n-hop questions over a synthetic world's corpus."""
    _check_noise(noise)
    return SampledScript(
        lambda context, _turn, sample: next_turn(context, noise=noise, seed=seed, sample=sample),
        codec=codec,
        name=name if not noise else f"{name}(noise={noise})",
    )


def sampling_world_solver(
    *, noise: float = 0.0, seed: int = 0, codec=None, name: str = "world-solver"
) -> ScriptedPolicy:
    """`workbench.worlds.scripted.solver.world_solver` with its noise drawn per sampling seed, so n attempts
    at one question disagree now and then (as a sampled model does) and difficulty can be 0 < k < n."""
    _check_noise(noise)
    return SampledScript(
        lambda context, _turn, sample: solver_turn(context, noise=noise, seed=f"{seed}:{sample}"),
        codec=codec,
        name=name if not noise else f"{name}(noise={noise},sampled)",
    )


__all__ = [
    "ENTITY_PHRASES",
    "NOISE_KINDS",
    "SampledScript",
    "next_turn",
    "question_text",
    "sampling_world_solver",
    "world_proposer",
]

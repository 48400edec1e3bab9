"""A scripted NB-Agent that solves world questions the REPL way: a plan in the notepad and generic Python.

Where `solver.world_solver` reads passages and copies names, this agent writes code that never names
an entity: the question is read from the notebook variable `task`, the plan (one todo per relation,
innermost first) goes into the notepad, and every later turn runs the same cell, which takes the first
open todo, searches, extracts the next entity with that relation's pattern and ticks the todo, or,
with nothing left open, submits the entity in hand. Each cell prints what is left (`Deimi | todo: 1`)
and the notepad shows it. The only decision left to a model that imitates it is *whether to keep
going*: a short-horizon teacher (`give_up`) sometimes answers right after the first hop with a short
submit cell. Since the hop cell finishes the episode by itself, keeping going is never wrong and
answering early is the one way to fail: one decision, the same in every state. This is the teacher
of the CPU demo.

    policy = world_coder()                  # always finishes the plan
    policy = world_coder(give_up=0.7)       # a short-horizon teacher: often answers after one hop
    policy = world_coder(compact=True)      # the same cells, the hop cell a function the plan defines

`compact=True` (the SmolLM2 demo's teacher) writes the hop cell's code once, as `hop()` in the plan
cell, and every later turn is `hop()`: the same decisions and observations in a sixth of the hop
turns' tokens (141 of SmolLM2's tokens per hop turn become 14), which is most of an episode's
generation time on a CPU.
"""

from __future__ import annotations

import re

from workbench.policies.scripted import ScriptedPolicy
from workbench.worlds.scripted.solver import parse_chain_question, seeded_chance

# relation phrase -> the sentence pattern that states it in a passage ({} = the subject, escaped)
FACT_PATTERNS = {
    "director": "{} was directed by ([^.]+)",
    "release year": "{} is a [a-z ]+ film released in ([0-9]+)",
    "founder": "{} is an organisation founded in [0-9]+ by ([^.]+)",
    "headquarters": "The headquarters of {} are in ([^.]+)",
    "founding year": "{} is an organisation founded in ([0-9]+)",
    "birthplace": "{} was born in the city of ([^.]+)",
    "birth year": "{} is an? [a-z ]+ born in ([0-9]+)",
    "occupation": "{} is an? ([a-z ]+) born in",
    "country": "{} is a city located in ([^.]+)",
    "capital": "The capital of {} is ([^.]+)",
}
"""Relation phrase -> the regex of the sentence that states it in a world passage (`{}` is the escaped subject); the
coders plant these in the kernel."""

PLAN_TURN = (
    "<think>Plan the hops.</think>\n<code>\nimport re\n"
    f"FACTS = {FACT_PATTERNS!r}\n"
    "notepad.add_todo(re.findall(r'the ([a-z ]+?) of', task)[::-1])\n"
    "e = task.split(' of ')[-1].rstrip('?')\nprint(e, '| todo:', len(notepad.todos))\n</code>"
)
HOP_TURN = (
    "<think>Next hop.</think>\n<code>\n"
    "todo = [t for t in notepad.todos if t.status != 'done']\n"
    "if todo:\n"
    "    e = re.search(FACTS[todo[0].text].format(re.escape(e)), search(e + ' ' + todo[0].text)).group(1)\n"
    "    notepad.update_todo(todo[0].id, 'done')\n"
    "    print(e, '| todo:', len(todo) - 1)\n"
    "else:\n"
    "    submit_final_answer(e)\n</code>"
)
SUBMIT_TURN = "<think>Answer now.</think>\n<code>\nsubmit_final_answer(e)\n</code>"
COMPACT_PLAN_TURN = PLAN_TURN.replace(
    "e = task.split",
    "def hop():\n"
    "    global e\n"
    "    todo = [t for t in notepad.todos if t.status != 'done']\n"
    "    if not todo:\n"
    "        return submit_final_answer(e)\n"
    "    e = re.search(FACTS[todo[0].text].format(re.escape(e)), search(e + ' ' + todo[0].text)).group(1)\n"
    "    notepad.update_todo(todo[0].id, 'done')\n"
    "    print(e, '| todo:', len(todo) - 1)\n"
    "e = task.split",
)
COMPACT_HOP_TURN = "<think>Next hop.</think>\n<code>\nhop()\n</code>"
_PLAN_LINE = re.compile(r"^\[(.)\] \d+\. .+$", re.MULTILINE)


def next_turn(context: str, *, give_up: float = 0.0, seed: int = 0, compact: bool = False) -> str:
    """The coder's next turn for the episode whose visible text is `context`."""
    parsed = parse_chain_question(context)
    if parsed is None or any(p not in FACT_PATTERNS for p in parsed[1]):
        return "<think>I cannot parse this task.</think>\n<code>\nsubmit_final_answer('unknown')\n</code>"
    notepads = context.rsplit("<notepad>", 1)
    marks = _PLAN_LINE.findall(notepads[-1]) if len(notepads) > 1 else []
    if not marks:
        return COMPACT_PLAN_TURN if compact else PLAN_TURN
    done = sum(m == "x" for m in marks)
    if done == 1 < len(marks) and seeded_chance(give_up, f"{seed}|{parsed[0]}|give-up"):
        return SUBMIT_TURN  # the short-horizon habit: answer after one hop
    return COMPACT_HOP_TURN if compact else HOP_TURN


def world_coder(
    *, give_up: float = 0.0, seed: int = 0, codec=None, name: str = "world-coder", compact: bool = False
) -> ScriptedPolicy:
    """A ScriptedPolicy that solves world questions with generic code (see the module docstring).
    It needs the task in the notebook as `task` (`AgentConfig(task_variable="task")`, the default)."""
    knobs = ", ".join(f"{k}={v}" for k, v in (("give_up", give_up), ("compact", compact)) if v)
    return ScriptedPolicy(
        lambda context, _turn: next_turn(context, give_up=give_up, seed=seed, compact=compact),
        codec=codec,
        name=f"{name}({knobs})" if knobs else name,
    )


__all__ = [
    "COMPACT_HOP_TURN",
    "COMPACT_PLAN_TURN",
    "FACT_PATTERNS",
    "HOP_TURN",
    "PLAN_TURN",
    "SUBMIT_TURN",
    "next_turn",
    "world_coder",
]

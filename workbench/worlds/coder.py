"""A scripted NB-Agent that solves world questions the REPL way: with generic Python.

Where `solver.world_solver` reads passages and copies names, this one writes code that parses the
search output with a regular expression and keeps the current entity in a variable, so no name is
ever copied by the model: the task is read from the notebook variable `task`, and each hop is
`r = search(e + ' <phrase>')` then `e = re.search(<pattern for the phrase>, r).group(1)`. The plan
lives in the notepad as one todo per hop, ticked off as it goes; the next hop is the first open
todo. This is the teacher of the CPU demo: a tiny model can learn it from a few hundred episodes.

    policy = world_coder()                  # always finishes the chain
    policy = world_coder(give_up=0.7)       # a short-horizon teacher: often answers after one hop

Turn 0:  the plan, by code: one todo per relation phrase of `task`, innermost first; `e` = the start.
Turn k:  the first open todo's hop, or `submit_final_answer(e)` when none is left.
"""

from __future__ import annotations

import re

from workbench.policies.registry import register_scripted
from workbench.policies.scripted import ScriptedPolicy
from workbench.worlds.solver import _chance, parse_question

# relation phrase -> a Python expression for the regex that captures the next entity, given `e`
HOP_REGEX = {
    "director": "e + ' was directed by ([^.]+)'",
    "release year": "e + ' is a [a-z ]+ film released in ([0-9]+)'",
    "founder": "e + ' is an organisation founded in [0-9]+ by ([^.]+)'",
    "headquarters": "'The headquarters of ' + e + ' are in ([^.]+)'",
    "founding year": "e + ' is an organisation founded in ([0-9]+)'",
    "birthplace": "e + ' was born in the city of ([^.]+)'",
    "birth year": "e + ' is an? [a-z ]+ born in ([0-9]+)'",
    "occupation": "e + ' is an? ([a-z ]+) born in'",
    "country": "e + ' is a city located in ([^.]+)'",
    "capital": "'The capital of ' + e + ' is ([^.]+)'",
}
_TODO = re.compile(r"^\[(.)\] (\d+)\. (.+)$", re.MULTILINE)


def hop_code(phrase: str) -> str:
    return f"r = search(e + ' {phrase}')\ne = re.search({HOP_REGEX[phrase]}, r).group(1)"


PLAN_CODE = ("import re\n"
             "notepad.add_todo(re.findall(r'the ([a-z ]+?) of', task)[::-1])\n"
             "e = task.split(' of ')[-1].rstrip('?')\n"
             "print(e)")


def next_turn(context: str, *, give_up: float = 0.0, seed: int = 0) -> str:
    """The coder's next turn for the episode whose visible text is `context`."""
    parsed = parse_question(context)
    if parsed is None or any(p not in HOP_REGEX for p in parsed[1]):
        return "<think>I cannot parse this task.</think>\n<code>\nsubmit_final_answer('unknown')\n</code>"
    start = parsed[0]
    notepads = context.rsplit("<notepad>", 1)
    todos = _TODO.findall(notepads[-1]) if len(notepads) > 1 else []
    if not todos:  # first turn: the plan, read from the task by code
        return f"<think>Plan the hops.</think>\n<code>\n{PLAN_CODE}\n</code>"
    open_todos = [(int(i), text) for mark, i, text in todos if mark != "x"]
    done = len(todos) - len(open_todos)
    if not open_todos or (done == 1 and _chance(give_up, f"{seed}|{start}|give-up")):
        return "<think>All done.</think>\n<code>\nsubmit_final_answer(e)\n</code>"
    index, phrase = open_todos[0]
    lines = [hop_code(phrase), f"notepad.update_todo({index}, 'done')", "print(e)"]
    return f"<think>Next: {phrase}.</think>\n<code>\n" + "\n".join(lines) + "\n</code>"


def world_coder(*, give_up: float = 0.0, seed: int = 0, codec=None, name: str = "world-coder") -> ScriptedPolicy:
    """A ScriptedPolicy that solves world questions with generic code (see the module docstring).
    It needs the task in the notebook as `task` (`AgentConfig(task_variable="task")`, the default)."""
    return ScriptedPolicy(lambda context, _turn: next_turn(context, give_up=give_up, seed=seed), codec=codec,
                          name=f"{name}(give_up={give_up})" if give_up else name)


register_scripted("coder", world_coder)

__all__ = ["HOP_REGEX", "hop_code", "next_turn", "world_coder"]

"""Scripted players for tests/envs/vf_arith.py's two-turn sums (workbench's side; `--plugin verifiers_players`)."""

from __future__ import annotations

import re


def adder(context: str, turn: int) -> str:
    """The sum the conversation asks for so far: the question's A + B, plus each "Now add C."."""
    a, b = re.findall(r"What is (\d+) \+ (\d+)\?", context)[-1]
    return str(int(a) + int(b) + sum(int(c) for c in re.findall(r"Now add (\d+)\.", context)))


def chatty(context: str, turn: int) -> str:
    """Always wrong, never brief, with a lone surrogate in the text."""
    return "I really cannot say \ud800"


def register() -> None:
    from workbench.policies import ScriptedPolicy, register_scripted

    register_scripted("adder", lambda: ScriptedPolicy(adder, name="adder"))
    register_scripted("chatty", lambda: ScriptedPolicy(chatty, name="chatty"))

"""A small verifiers `MultiTurnEnv` for tests/envs/test_verifiers.py, loaded in the verifiers sidecar only
(`load_environment("vf-arith")`; it imports verifiers, which workbench's own virtualenv does not hold).

Two turns: "What is A + B?", then the environment's reply "Now add C."; the episode ends after the second
answer. Its rubric: `correct` (the last answer is A + B + C, weight 1) and `brief` (under 12 characters,
weight 0.5 * scale). `setup_state` and `env_response` keep count of the replies in the state.
"""

from __future__ import annotations

from typing import Any

import verifiers as vf
from datasets import Dataset

TRIPLES = [(1, 2, 3), (4, 5, 6), (7, 8, 9)]


class TwoStepArith(vf.MultiTurnEnv):
    async def setup_state(self, state: vf.State) -> vf.State:
        state["replies"] = 0
        return state

    async def env_response(self, messages: vf.Messages, state: vf.State, **kwargs: Any) -> vf.Messages:
        state["replies"] += 1
        return [vf.UserMessage(content=f"Now add {state['info']['then']}.")]

    @vf.stop
    async def answered_twice(self, state: vf.State) -> bool:
        return len(state["trajectory"]) >= 2


def correct(completion: vf.Messages, info: dict[str, Any]) -> float:
    return float(completion[-1]["content"].strip() == str(info["total"]))


def brief(completion: vf.Messages) -> float:
    return float(len(str(completion[-1]["content"])) < 12)


def load_environment(scale: float = 1.0) -> vf.Environment:
    rows = [
        {"question": f"What is {a} + {b}?", "answer": str(a + b), "info": {"then": c, "total": a + b + c}}
        for a, b, c in TRIPLES
    ]
    rubric = vf.Rubric(funcs=[correct, brief], weights=[1.0, 0.5 * scale])
    return TwoStepArith(
        dataset=Dataset.from_list(rows), system_prompt="Answer with a number.", rubric=rubric, max_turns=4
    )

"""One notepad in context: the newest, at the end of the newest observation; never stale copies.

Real episodes (sandboxed kernels, the gateway) with a scripted policy that records every context it
was given, so the tests check the very token ids a model would have seen.
"""

from __future__ import annotations

import re

from workbench.agent import AgentConfig, NBAgent
from workbench.agent.episode import render_notepad
from workbench.policies import ScriptedPolicy
from workbench.train.rollout import trajectory_samples

SEEN = re.compile(r"^seen-(\d+)$", re.MULTILINE)


class Recording(ScriptedPolicy):
    """A scripted policy that keeps every prompt it was asked to continue."""

    def __init__(self, fn, **kwargs):
        super().__init__(fn, **kwargs)
        self.prompts: list[list[int]] = []

    def complete(self, prompt, params):
        self.prompts.append(list(prompt))
        return super().complete(prompt, params)


def note_taker(submit_at: int):
    """Turn k writes `fact k` to the notepad and prints `seen-k`; turn `submit_at` submits."""

    def script(context: str, _turn: int) -> str:
        k = max([int(x) + 1 for x in SEEN.findall(context)], default=0)  # hard trims keep the newest output
        if k >= submit_at:
            return "<think>done</think>\n<code>\nsubmit_final_answer('ok')\n</code>"
        return f"<think>note {k}</think>\n<code>\nnotepad.add_fact('fact {k}')\nprint('seen' + '-{k}')\n</code>"

    return script


def test_after_four_turns_the_context_holds_only_the_newest_notepad_at_its_end(pick, world_tools):
    policy = Recording(note_taker(submit_at=4))
    [traj] = NBAgent(policy, tools=world_tools, config=AgentConfig(max_steps=6, max_context_tokens=16384)).run(
        pick(1, 1), progress=False
    )
    assert traj.termination == "submitted", (traj.termination, traj.error)
    assert len(traj.steps) == 5 and len(policy.prompts) == 5
    context = policy.codec.decode(policy.prompts[4])  # what the fifth turn saw, after four turns
    newest = "<notepad>\n" + render_notepad(traj.steps[3].notepad) + "\n</notepad>\n"
    assert traj.steps[3].notepad["facts"] == ["fact 0", "fact 1", "fact 2", "fact 3"]
    assert context.count("<notepad>") == 1 and context.count("</notepad>") == 1
    assert context.endswith(newest)  # the newest notepad closes the context ...
    assert context.endswith(traj.steps[3].observation_text)  # ... as the end of the newest observation
    assert context.rindex("</output>") < context.index("<notepad>")
    assert [m for m in SEEN.findall(context)] == ["0", "1", "2", "3"]  # every output is still there
    for k, prompt in enumerate(policy.prompts):  # and no turn ever saw two notepads
        assert policy.codec.decode(prompt).count("<notepad>") == (1 if k else 0)


def test_each_turn_is_trained_on_exactly_the_tokens_it_saw(pick, world_tools):
    policy = Recording(note_taker(submit_at=4))
    [traj] = NBAgent(policy, tools=world_tools, config=AgentConfig(max_steps=6, max_context_tokens=16384)).run(
        pick(1, 1), progress=False
    )
    assert traj.termination == "submitted"
    for step in traj.steps[:-1]:  # the recorded observation is what followed the turn, notepad included
        assert policy.codec.decode(step.observation_ids) == step.observation_text
        assert step.observation_text.endswith("</notepad>\n")
    samples = trajectory_samples(traj, eos_token_id=policy.codec.eos_token_id, max_completion_length=10**6)
    covered = []
    for sample in samples:
        for k in sorted({t for t in sample["step_index"] if t >= 0}):
            start = sample["step_index"].index(k)
            assert sample["prompt_ids"] + sample["completion_ids"][:start] == policy.prompts[k]
            n = len(traj.steps[k].completion_ids)
            assert sample["completion_ids"][start : start + n] == traj.steps[k].completion_ids
            assert sample["env_mask"][start : start + n] == [1] * n
            covered.append(k)
    assert sorted(covered) == list(range(len(traj.steps)))  # every turn once
    for seg in traj.segments():  # SFT's sequences: the same prompts
        assert seg["prompt_ids"] in policy.prompts


def test_a_hard_trim_keeps_one_notepad_last(pick, world_tools):
    policy = Recording(note_taker(submit_at=6))
    config = AgentConfig(max_steps=8, max_context_tokens=3000, max_new_tokens=200, trim="hard")
    [traj] = NBAgent(policy, tools=world_tools, config=config).run(pick(1, 1), progress=False)
    assert traj.termination == "submitted", (traj.termination, traj.error)
    contexts = [policy.codec.decode(p) for p in policy.prompts]
    assert any("Earlier steps were removed" in c for c in contexts), "the window should force a trim"
    for k, context in enumerate(contexts[1:], start=1):
        assert context.count("<notepad>") == 1
        after = context.rsplit("</notepad>", 1)[1]
        assert after.strip() in ("", "<|assistant|>")  # nothing but the chat template after it
        assert f"- fact {k - 1}" in context.rsplit("<notepad>", 1)[1]  # and it is the newest


def test_scripted_turns_advance_while_the_notepad_block_moves(world_tools):
    """`from_turns` counts its turns from the prompt ids; the notepad tail moving must not reset it.

    Each turn writes the notepad (so the block moves after every turn) and prints its own index:
    turns 0, 1, 2 must each run once, then turn 3 submits."""
    turns = [f"<think>t{k}</think>\n<code>\nnotepad.add_fact('f{k}')\nprint('turn-{k}')\n</code>" for k in range(3)]
    turns.append("<think>done</think>\n<code>\nsubmit_final_answer('ok')\n</code>")
    policy = ScriptedPolicy.from_turns(turns)
    from workbench.trajectory import Task

    agent = NBAgent(policy, tools=world_tools, config=AgentConfig(max_steps=6, max_context_tokens=16384))
    [traj] = agent.run([Task(id="t0", question="q", golden_answers=["ok"])], progress=False)
    printed = [re.findall(r"turn-(\d)", s.observation_text or "") for s in traj.steps]
    assert [p[:1] for p in printed] == [["0"], ["1"], ["2"], []]
    assert traj.final_answer == "ok" and traj.termination == "submitted", (traj.termination, traj.error)

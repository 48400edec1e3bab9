"""Per-turn text work never runs on the event loop that all episodes share.

A degenerate turn or a huge notepad costs CPU time (parsing, tokenizing); done on the loop it would
stall every concurrent episode. Real episodes: the policy records the loop's thread, the codec the
thread each observation is encoded on.
"""

from __future__ import annotations

import threading

from workbench.agent import AgentConfig, NBAgent
from workbench.policies import ScriptedPolicy
from workbench.policies.base import ByteCodec

MB = 200_000  # big enough to matter on a loop, small enough for the scripted policy's prefix hashing


class ThreadRecordingCodec(ByteCodec):
    """Records the thread of each observation or notepad encoding the agent does (not the policy's own)."""

    def __init__(self):
        self.observation_threads: set[int] = set()
        self.in_policy = False

    def encode(self, text: str) -> list[int]:
        if text.startswith(("\n<output>", "<notepad>")) and not self.in_policy:
            self.observation_threads.add(threading.get_ident())
        return super().encode(text)


class CodecMarkingPolicy(ScriptedPolicy):
    def complete(self, prompt, params):
        self.codec.in_policy = True
        try:
            return super().complete(prompt, params)
        finally:
            self.codec.in_policy = False


def test_degenerate_turns_and_a_huge_notepad_are_handled_off_the_loop(pick, world_tools):
    codec = ThreadRecordingCodec()
    loop_threads: set[int] = set()
    turns = [
        "<think>" * (MB // 7) + "<code>print(1)</code>",  # one unclosed think, a megabyte long
        "<code>```\n" + " " * MB + "x</code>",  # an unclosed fence: runs as written, a SyntaxError
        "<think>big notepad</think><code>\nnotepad.write_draft('d' * 100_000)\nprint('ok')\n</code>",
        "<think>done</think><code>\nsubmit_final_answer(str(len(notepad.snapshot()['draft'])))\n</code>",
    ]

    def script(context: str, turn: int) -> str:
        loop_threads.add(threading.get_ident())
        return turns[min(context.count(" tokens left]\n"), 3)]  # one budget notice per observation

    policy = CodecMarkingPolicy(script, codec=codec)
    config = AgentConfig(max_steps=6, max_context_tokens=20 * MB, max_new_tokens=2 * MB)
    [traj] = NBAgent(policy, tools=world_tools, config=config).run(pick(1, 1), progress=False)
    assert traj.termination == "submitted", (traj.termination, traj.error)
    assert traj.final_answer == "100000"  # the largest draft a notepad takes
    assert traj.steps[0].format_flags == ["unclosed_think"] and traj.steps[0].code == "print(1)"
    assert "SyntaxError" in traj.steps[1].observation_text
    assert traj.steps[2].observation_text.count("d" * 1000) > 0  # the notepad draft was shown
    assert len(loop_threads) == 1 and codec.observation_threads
    assert not codec.observation_threads & loop_threads  # observations were encoded off the loop

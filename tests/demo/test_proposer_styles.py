"""`DemoConfig.proposer_style`: the code style keeps `--proposer learned`'s episodes and cache keys; the hop style
(`--model smollm2 --proposer learned`) sets the kernel up with `hop(i)` and `ask()`, and its teacher, played
through the demo's proposer agent in real kernels with real search, writes questions the world answers."""

from __future__ import annotations

import pytest

from workbench.demo.config import DemoConfig
from workbench.demo.proposer_styles import CODE_STYLE, HOP_STYLE, PROPOSER_STYLES
from workbench.demo.proposers import PROPOSER_TEACHER_ID, proposer_agent
from workbench.errors import ConfigError
from workbench.evolve.hop_proposer import HOP_SETUP
from workbench.evolve.proposer import proposal_of, proposer_task, proposer_tools, split_document
from workbench.worlds import make_world

WORLD = make_world(seed=0, size="small")


def test_the_code_style_keeps_its_agent_and_fingerprint_and_the_hop_style_sets_the_kernel_up():
    code, hop = DemoConfig(), DemoConfig.preset("smollm2_learned")
    assert (code.proposer_style, hop.proposer_style) == ("code", "hop")
    assert "task_setup" not in proposer_agent(code) and CODE_STYLE.fingerprint == PROPOSER_TEACHER_ID
    assert proposer_agent(hop)["task_setup"] == HOP_SETUP
    assert proposer_agent(hop, task_setup="x = 1")["task_setup"] == "x = 1"  # a caller's keywords win
    assert len({style.fingerprint for style in PROPOSER_STYLES.values()}) == 2  # separate caches
    with pytest.raises(ConfigError, match="'code', 'hop'"):
        DemoConfig(proposer_style="cells")  # type: ignore[arg-type]


@pytest.mark.slow
def test_the_hop_style_teacher_through_the_demo_agent_asks_questions_the_world_answers():
    """8 prompts allowing 2, 3 or 4 hops: each episode submits a chain of at most n hops whose answer is the
    world's, and it chose its length (the teacher asks after k hops with probability 1/(n + 1 - k))."""
    from workbench.agent import AgentConfig, NBAgent
    from workbench.demo.questions import chain_length, question_check, world_answer
    from workbench.search import BM25Retriever, Corpus

    retriever = BM25Retriever.build(Corpus.from_rows(WORLD.corpus()), show_progress=False)
    cfg = DemoConfig.preset("smollm2_learned")
    rows = WORLD.corpus()
    tasks = [
        proposer_task(split_document(rows[(37 * j) % len(rows)]), 2 + j % 3, iteration=0, prompt_index=j)
        for j in range(8)
    ]
    agent = NBAgent(
        HOP_STYLE.teacher(seed=3),
        tools=proposer_tools(retriever),
        role="proposer",
        config=AgentConfig(**proposer_agent(cfg)),
        concurrency=4,
    )
    trajs = agent.run(tasks)
    assert [t.termination for t in trajs] == ["submitted"] * 8, [(t.termination, t.error) for t in trajs]
    lengths = []
    for traj in trajs:
        proposal = proposal_of(traj)
        assert proposal is not None and question_check(traj, WORLD) == (True, True), proposal
        assert world_answer(WORLD, proposal.question) == proposal.answer
        lengths.append(chain_length(proposal.question))
        assert 1 <= lengths[-1] <= traj.hops, (proposal.question, traj.hops)
        assert all(len(step.raw) < 80 for step in traj.steps)  # one-line turns
    assert len(set(lengths)) > 1, lengths  # the length is the teacher's choice, not the prompt's n

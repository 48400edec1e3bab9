"""The code-style teacher solves world questions with generic code and decides to stop by its notepad."""

import pytest

from workbench.agent import AgentConfig, NBAgent
from workbench.resolve import search_registry
from workbench.search import BM25Retriever, Corpus
from workbench.worlds import make_world
from workbench.worlds.scripted.coder import (
    COMPACT_HOP_TURN,
    COMPACT_PLAN_TURN,
    HOP_TURN,
    PLAN_TURN,
    SUBMIT_TURN,
    next_turn,
    world_coder,
)


def test_turns_follow_the_notepad():
    task = "Task: What is the country of the birthplace of Nailur Bredre?\n"
    assert next_turn(task) == PLAN_TURN
    open_plan = task + "<notepad>\n### Plan\n[x] 1. birthplace\n[ ] 2. country\n</notepad>"
    assert next_turn(open_plan) == HOP_TURN
    assert next_turn(open_plan.replace("[ ] 2.", "[x] 2.")) == HOP_TURN  # the hop cell submits when all is done
    assert next_turn(open_plan.replace("[ ] 2.", "[x] 2."), give_up=1.0) == HOP_TURN
    assert next_turn(open_plan, give_up=1.0) == SUBMIT_TURN  # short-horizon: stops after one hop
    assert next_turn(task, compact=True) == COMPACT_PLAN_TURN
    assert next_turn(open_plan, compact=True) == COMPACT_HOP_TURN
    assert next_turn(open_plan, give_up=1.0, compact=True) == SUBMIT_TURN  # the same decision, either style


@pytest.mark.parametrize("compact", [False, True])
def test_generic_code_solves_every_hop_count_in_real_kernels(compact):
    world = make_world(seed=0, size="small")
    tools = search_registry(BM25Retriever.build(Corpus.from_rows(world.corpus()), show_progress=False))
    tasks = [next(t for t in world.tasks("test") if t.metadata["hops"] == h) for h in (1, 2, 3, 4)]
    config = AgentConfig(max_steps=6, max_context_tokens=16384, max_new_tokens=2048, prompt="compact")
    runs = NBAgent(world_coder(compact=compact), tools=tools, config=config, concurrency=4).run(tasks, progress=False)
    for traj in runs:
        assert traj.termination == "submitted" and traj.final_answer in traj.task.golden_answers
        assert len(traj.steps) == traj.hops + 2  # plan, one generic cell per hop, the same cell submits
        assert all(s.code == traj.steps[1].code for s in traj.steps[1:])  # the same cell every turn
        assert traj.steps[1].code == ("hop()" if compact else HOP_TURN.split("<code>\n")[1].split("\n</code>")[0])

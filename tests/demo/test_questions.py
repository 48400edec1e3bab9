"""A learned proposer's questions, checked (`workbench.demo.questions`): valid when the episode passes Dr. Zero's
format check, answerable when the world's facts give the submitted answer."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from workbench.demo.questions import chain_length, question_lines, question_shares, question_summary, world_answer
from workbench.evolve.proposer import SUBMIT
from workbench.trajectory import HostCall, Step, Task, Trajectory
from workbench.worlds import make_world

WORLD = make_world(seed=0, size="small")
TRAIN = WORLD.tasks("train")


@settings(max_examples=80, deadline=None)
@given(index=st.integers(0, len(TRAIN) - 1))
def test_the_world_answers_its_own_questions(index):
    task = TRAIN[index]
    assert world_answer(WORLD, task.question) in task.golden_answers


def test_questions_the_world_cannot_follow_have_no_answer():
    entity = WORLD.entities[0].name
    assert world_answer(WORLD, "Who wrote the book?") is None  # no relation chain
    assert world_answer(WORLD, "What is the capital of Nowhere Atall?") is None  # no such entity
    assert world_answer(WORLD, f"What is the favourite colour of {entity}?") is None  # no such relation


def proposer(hops: int, question: str, answer: str, document: str) -> Trajectory:
    """A proposer episode that submitted (question, answer) in one thinking turn."""
    call = HostCall(SUBMIT, {"question": question, "answer": answer}, result="ok")
    step = Step(0, raw="<think>I will ask.</think>\n<code>\nsubmit()\n</code>", host_calls=[call])
    task = Task(f"p-{question}", "prompt", [], {"hops": hops, "document": document})
    return Trajectory(task=task, role="proposer", steps=[step])


def test_shares_count_valid_and_answerable_questions_per_hop():
    [right, other] = TRAIN[1:3]  # one-hop questions
    answer, wrong = right.golden_answers[0], other.golden_answers[0]
    doc = f"Passage naming {answer} and {wrong}."
    trajs = [
        proposer(1, right.question, answer, doc),  # valid, answerable
        proposer(1, right.question, wrong, doc),  # valid: the world's answer is another
        proposer(1, f"Is {answer} the answer?", answer, doc),  # leaks its answer: not valid
        proposer(2, "What is the colour of the sky?", answer, doc),  # valid, no chain to follow
    ]
    shares = question_shares(trajs, WORLD)
    # the two valid one-hop proposals read as 1-hop chains; the sky question reads as no chain
    assert shares["1"] == {"proposals": 3.0, "valid": 2 / 3, "answerable": 1 / 3, "chain1": 2.0}
    assert shares["2"] == {"proposals": 1.0, "valid": 1.0, "answerable": 0.0}
    assert shares["all"] == {"proposals": 4.0, "valid": 0.75, "answerable": 0.25, "chain1": 2.0}
    assert list(shares) == ["1", "2", "all"]


def test_a_question_shorter_than_its_prompt_asked_is_counted_by_its_own_chain():
    """A prompt asked for 3 hops, the proposer wrote a 2-hop chain the world answers: it stays in hop 3's group
    (HRPO's) and is counted as chain2 there."""
    two_hop = next(t for t in TRAIN if t.metadata.get("hops") == 2)
    answer = two_hop.golden_answers[0]
    assert chain_length(two_hop.question) == 2 and chain_length("Who wrote the book?") is None
    shares = question_shares([proposer(3, two_hop.question, answer, f"It was {answer}.")], WORLD)
    assert shares["3"] == {"proposals": 1.0, "valid": 1.0, "answerable": 1.0, "chain2": 1.0}
    it = {"iteration": 0, "proposer_update": {"rollouts": [shares]}, "questions": shares}
    assert question_lines([it])[1] == (
        "    hop 3: HRPO rollouts 1 / 1 of 1 | QA 1 / 1 of 1 (valid ones, by chain length: 2-hop 2)"
    )
    assert question_summary([it])[0]["chain_hops"]["3"] == {2: 2}


def test_lines_and_summary_sum_rollout_batches_per_hop():
    rollouts = [
        {"1": {"proposals": 2.0, "valid": 0.5, "answerable": 0.5, "format": 0.3}},
        {"1": {"proposals": 2.0, "valid": 1.0, "answerable": 0.5, "format": 0.6}},
    ]
    qa = {"1": {"proposals": 4.0, "valid": 0.75, "answerable": 0.25}}
    it = {"iteration": 0, "proposer_update": {"rollouts": rollouts}, "questions": qa}
    lines = question_lines([it])
    assert lines[1] == "    hop 1: HRPO rollouts 3 / 2 of 4 | QA 3 / 1 of 4"
    [row] = question_summary([it])
    assert row["hrpo_rollouts"]["1"] == {"proposals": 4, "valid": 3, "answerable": 2}
    assert row["qa_generation"]["1"] == {"proposals": 4, "valid": 3, "answerable": 1}

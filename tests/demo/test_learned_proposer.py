"""`python -m workbench.demo --proposer learned`: the proposer's teacher (cells that name no entity, questions
that pass the format check and that the solver's teacher answers), the proposer's pieces, and short runs of
both roles learning."""

from __future__ import annotations

import ast
import json
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from workbench.demo.report import proposer_lines
from workbench.demo.rl import hop_stats, whole_hop_groups
from workbench.evolve.proposer import proposal_of, proposer_task, proposer_tools, split_document
from workbench.trajectory import Task, Trajectory
from workbench.worlds import make_world
from workbench.worlds.schema import RELATIONS
from workbench.worlds.scripted.coder import FACT_PATTERNS
from workbench.worlds.scripted.coder_proposer import HOP_TURN, PLAN_TURN, STUCK_TURN, coder_proposer, next_turn

WORLD = make_world(seed=0, size="small")
NAMES = {e.name for e in WORLD.entities}
RELATION_OF = {r.phrase: name for name, r in RELATIONS.items()}
VALUES = {WORLD.lookup(e.id, r.name) for e in WORLD.entities for r in WORLD.relations_of(e.type)}


def _named(cell: str) -> list[str]:
    """The entity names and fact values of the world that `cell` contains."""
    return [v for v in NAMES | VALUES if re.search(rf"(?<![\w]){re.escape(v)}(?![\w])", cell)]


def _prompt(doc_index: int, hops: int) -> str:
    doc = split_document(WORLD.corpus()[doc_index])
    return proposer_task(doc, hops, iteration=0).question


# -- the teacher: no entity in its cells ----------------------------------------------------------
@settings(max_examples=60, deadline=None)
@given(
    doc=st.integers(0, len(WORLD.entities) - 1),
    hops=st.integers(1, 4),
    turn=st.integers(0, 5),
    options=st.lists(st.sampled_from(sorted(FACT_PATTERNS)), min_size=1, max_size=4, unique=True),
    sample=st.integers(0, 2**31),
)
def test_teacher_cells_name_no_entity_for_any_world_document(doc, hops, turn, options, sample):
    """Whatever document, hop count, turn and listed options: the first cell is the constant plan cell,
    later ones `hop(i)` with i the index of a listed option, and no cell holds an entity name or fact value."""
    context = _prompt(doc, hops)
    if turn:
        context += f"\n<output>\nhop {min(turn, hops)} of {hops} | options: {', '.join(options)}\n</output>\n"
    cell = next_turn(context, turn, seed=0, sample=sample)
    assert cell == PLAN_TURN if turn == 0 else cell in {HOP_TURN.format(i) for i in range(len(options))}
    assert _named(cell) == []


@settings(max_examples=200, deadline=None)
@given(context=st.text(), turn=st.integers(1, 10), sample=st.integers())
def test_teacher_on_arbitrary_text_writes_valid_python_choosing_only_listed_options(context, turn, sample):
    cell = next_turn(context, turn, sample=sample)
    code = cell.split("<code>\n", 1)[1].rsplit("</code>", 1)[0]
    ast.parse(code)
    if cell != STUCK_TURN:
        [arg] = [ast.literal_eval(node.args[0]) for node in ast.walk(ast.parse(code)) if isinstance(node, ast.Call)]
        listed = re.findall(r"^hop \d+ of \d+ \| options: (.+)$", context.rsplit("<output>", 1)[-1], re.MULTILINE)
        assert 0 <= arg < len([o for o in listed[-1].split(",") if o.strip()])


def test_teacher_constant_cells_name_no_entity():
    assert _named(PLAN_TURN) == [] and _named(STUCK_TURN) == []
    assert all(_named(HOP_TURN.format(i)) == [] for i in range(len(FACT_PATTERNS)))


# -- the teacher in real kernels: valid, answerable questions --------------------------------------
@pytest.fixture(scope="module")
def retriever():
    from workbench.search import BM25Retriever, Corpus

    return BM25Retriever.build(Corpus.from_rows(WORLD.corpus()), show_progress=False)


def _answer_in_world(question: str) -> str:
    """Follow the question's relation chain through the world's facts."""
    from workbench.worlds.scripted.solver import parse_chain_question

    start, phrases = parse_chain_question(f"Task: {question}")
    entity = start
    for phrase in phrases:
        entity = WORLD.lookup(entity, RELATION_OF[phrase])
    return entity


@pytest.mark.slow
def test_teacher_questions_pass_the_format_check_and_the_solver_teacher_answers_them(retriever):
    from workbench.agent import AgentConfig, NBAgent
    from workbench.evolve.scoring import format_components
    from workbench.resolve import search_registry
    from workbench.rewards.text import exact_match
    from workbench.worlds.scripted.coder import world_coder

    config = AgentConfig(max_steps=6, max_context_tokens=16384, max_new_tokens=4096, prompt="compact", seed=1)
    rows = WORLD.corpus()
    tasks = [
        proposer_task(split_document(rows[(37 * j) % len(rows)]), 1 + j % 4, iteration=0, prompt_index=j)
        for j in range(16)
    ]
    trajs = NBAgent(
        coder_proposer(seed=3), tools=proposer_tools(retriever), role="proposer", config=config, concurrency=4
    ).run(tasks)
    proposals = [proposal_of(t) for t in trajs]
    assert all(t.termination == "submitted" and p for t, p in zip(trajs, proposals, strict=True)), [
        (t.termination, t.error) for t in trajs
    ]
    formats = [format_components(t)["format"] for t in trajs]
    assert min(formats) > 0 and sum(f == 1.0 for f in formats) >= 12, formats
    for traj, p in zip(trajs, proposals, strict=True):
        assert all(_named(step.raw) == [] for step in traj.steps), [s.raw for s in traj.steps]
        assert _answer_in_world(p.question) == p.answer, p
        assert len(re.findall(r" of ", p.question)) <= traj.hops
    assert sum(len(re.findall(r" of ", p.question)) == t.hops for t, p in zip(trajs, proposals, strict=True)) >= 12
    solved = NBAgent(world_coder(), tools=search_registry(retriever), config=config, concurrency=4).run(
        [Task(f"q{j}", p.question, [p.answer]) for j, p in enumerate(proposals)]
    )
    assert [exact_match(t.final_answer, t.task.golden_answers) for t in solved] == [1.0] * len(solved), [
        (t.task.question, t.final_answer, t.task.golden_answers) for t in solved
    ]


def test_teacher_samples_differ_across_sampling_seeds():
    context = _prompt(5, 2) + "\n<output>\nhop 1 of 2 | options: director, release year, founder\n</output>\n"
    assert len({next_turn(context, 1, sample=s) for s in range(40)}) == 3
    assert next_turn(context, 1, sample=7) == next_turn(context, 1, sample=7)


def _proposer(hops: int, fmt: float, difficulty: float) -> Trajectory:
    traj = Trajectory(task=Task(f"p{hops}-{fmt}-{difficulty}", "prompt", [], {"hops": hops}), role="proposer")
    traj.rewards = {"format": fmt, "difficulty": difficulty, "total": 0.5 * fmt + difficulty}
    return traj


def test_hop_stats_average_format_and_difficulty_per_hop():
    stats = hop_stats([_proposer(1, 1.0, 0.0), _proposer(1, 0.5, 1.0), _proposer(3, 0.75, 0.5)])
    # hop 1: totals 0.5·1 + 0 = 0.5 and 0.5·0.5 + 1 = 1.25, spread 0.75; hop 3 alone: spread 0
    assert stats["1"] == {"proposals": 2.0, "format": 0.75, "difficulty": 0.5, "spread": 0.75}
    assert stats["3"] == {"proposals": 1.0, "format": 0.75, "difficulty": 0.5, "spread": 0.0}
    assert stats["all"]["proposals"] == 3.0 and stats["all"]["format"] == pytest.approx(2.25 / 3)
    assert list(stats) == ["1", "3", "all"]


def test_whole_hop_groups_leave_out_hops_with_too_few_prompts():
    tasks = [Task(str(i), "q", [], {"hops": h}) for i, h in enumerate([1, 1, 1, 2, 3, 3])]
    kept, left = whole_hop_groups(tasks, 2)
    assert [t.id for t in kept] == ["0", "1", "2", "4", "5"] and left == [2]
    assert whole_hop_groups(tasks, 4) == ([], [1, 2, 3])


def test_proposer_episodes_end_by_turns_and_tokens_never_by_the_clock():
    """A slower machine must get the same proposer episodes: no wall-clock budget cuts them (AgentConfig's
    300 s default ended SmolLM2's after their first turn), as none cuts the solver's."""
    from workbench.agent import AgentConfig
    from workbench.demo.config import DemoConfig
    from workbench.demo.pipeline import DEMO_EPISODE_WALL_S
    from workbench.demo.proposers import proposer_agent

    for cfg in (DemoConfig(), DemoConfig.preset("smollm2_learned")):
        assert AgentConfig(**proposer_agent(cfg)).wall_clock_s == DEMO_EPISODE_WALL_S >= 3600


def test_an_hrpo_micro_batch_that_splits_a_hop_group_or_the_step_names_its_fix():
    from types import SimpleNamespace

    from workbench.demo.config import DemoConfig
    from workbench.demo.rl import proposer_train_fn
    from workbench.errors import ConfigError

    tasks = [Task(str(i), "q", [], {"hops": 1}) for i in range(4)]
    req = SimpleNamespace(role="proposer", tasks=tasks, episodes=None, estimator="hrpo")
    for micro in (3, 1):  # 3 does not divide the step's 4 rows; 1 splits a hop group of 2
        cfg = DemoConfig(proposer_rl_batch=4, proposer_hop_group=2, proposer_rl_micro_batch=micro)
        train_fn = proposer_train_fn(None, None, cfg, solver_fn=lambda r: None, on_step=lambda line: None)
        with pytest.raises(ConfigError, match="proposer_rl_micro_batch"):
            train_fn(req)


def test_proposer_lines_show_rollouts_and_qa_generation_per_hop():
    it = {
        "iteration": 0,
        "qa_size": 3,
        "evolve/format/hop1": 0.9,
        "evolve/difficulty/hop1": 0.25,
        "evolve/solver_pass_rate/hop1": 0.5,
        "proposer_update": {
            "rollouts": [
                {
                    "1": {"proposals": 2.0, "format": 0.5, "difficulty": 0.0},
                    "2": {"proposals": 2.0, "format": 0.25, "difficulty": 0.0},
                },
                {"1": {"proposals": 2.0, "format": 0.75, "difficulty": 0.5}},
            ]
        },
    }
    lines = proposer_lines([it])
    assert lines[0] == "  iteration 0: 3 questions in the QA set"
    assert "format 0.50 → 0.75" in lines[1] and "difficulty 0.00 → 0.50" in lines[1]
    assert "QA generation format 0.90, difficulty 0.25, solver pass rate 50.0%" in lines[1]
    assert lines[2].startswith("    hop 2:") and "0.25 →   - " in lines[2]


@pytest.mark.slow
@pytest.mark.timeout(1800)  # every stage of the demo with real kernels: minutes on a busy machine
def test_learned_proposer_smoke_run(tmp_path, torch_threads):
    """SFT on the code-style proposer teacher, one HRPO update of the proposer, per-hop metrics.

    HRPO moves the weights exactly when some hop's rollout rewards differ (otherwise every advantage
    is 0): the check holds the update to that rule either way. With FAST's two SFT steps the proposer
    rarely writes a valid question, so a flat batch (no change) is the common case here."""
    import torch
    from transformers import AutoModelForCausalLM

    from workbench.demo import DemoConfig, LearnedProposer, run_demo

    lines: list[str] = []
    run = tmp_path / "learned"
    cfg = DemoConfig.preset("fast_learned", run_dir=str(run), torch_threads=torch_threads)
    run_demo(cfg, out=lines.append, proposer=LearnedProposer())
    summary = json.loads((run / "summary.json").read_text())
    assert summary["proposer"] == "learned"
    assert summary["proposer_sft_losses"][1] < summary["proposer_sft_losses"][0]
    [it] = summary["proposer_per_iteration"]
    update = summary["evolution"][0]["proposer_update"]
    assert update["global_step"] == 1 and update["rollouts"], update
    assert it["per_hop"] and all({"format", "difficulty", "solver_pass_rate"} <= set(v) for v in it["per_hop"].values())
    assert any("HRPO steps on the proposer" in line for line in lines)
    assert any("QA generation format" in line for line in lines)
    # the checks: the proposer's first and last weights on the same 2 prompts against the first solver, the held-out
    # change on the same questions; their lines are the run's last two, and summary.json holds both
    check = summary["coevolution"]
    assert len(check["proposer_difficulty"]["first"]) == len(check["proposer_difficulty"]["last"]) == 2
    assert len(check["heldout"]["first"]) == len(check["heldout"]["last"]) == cfg.eval_tasks
    assert lines[-2].startswith("proposer difficulty: ") and lines[-1].startswith("held-out accuracy: ")
    assert (run / "iteration0" / "proposer" / "config.json").exists() and (run / "coevolution_check").is_dir()
    [sft_dir] = [p for p in (run / "cache").iterdir() if p.name.startswith("proposer-sft-")]
    before = AutoModelForCausalLM.from_pretrained(sft_dir).state_dict()
    after = AutoModelForCausalLM.from_pretrained(run / "final_proposer").state_dict()
    moved = any(not torch.equal(before[k], after[k]) for k in before)
    varied = any(stats["spread"] > 0 for batch in update["rollouts"] for h, stats in batch.items() if h != "all")
    assert moved == varied, (moved, update["rollouts"])


def test_a_solver_grpo_step_short_of_questions_is_skipped_and_says_why():
    """The solver's GRPO step needs rl_questions_per_step questions: with 3 valid ones of a step of 4 it takes
    none, and the run's output says so (a run at SMOLLM2_LEARNED's sizes got 3)."""
    from types import SimpleNamespace

    from workbench.demo import DemoConfig
    from workbench.demo.rl import demo_train_fn

    lines: list[str] = []
    train_fn = demo_train_fn(None, None, DemoConfig(rl_questions_per_step=4), on_step=lines.append)
    req = SimpleNamespace(role="solver", tasks=[object()] * 3, iteration=0, estimator="grpo")
    result = train_fn(req)
    why = "only 3 valid questions, fewer than rl_questions_per_step=4"
    assert result == {"skipped": why}
    assert lines == [f"  iteration 0: no GRPO step on the solver: {why}"]

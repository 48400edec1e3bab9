"""Slow: the REPL synthesizer (real sandboxed kernels, host tools through the gateway) produces an
accepted QA; synthesized QAs drive one real GRPO step of a tiny local model (the `asearcher` mode)."""

from __future__ import annotations

import os

import pytest
import torch

from workbench.store import Store
from workbench.synth import SynthesisConfig, repl_teacher, run_repl_synthesis

pytestmark = pytest.mark.slow
os.environ.setdefault("HF_HUB_OFFLINE", "1")


def test_repl_synthesizer_produces_an_accepted_qa(tmp_path, graph, site, closed_book):
    store = Store(tmp_path)
    seeds = [site.url_for(n) for n in ("Libra Works",)] + [
        site.url_for(e.id) for e in site.world.entities if e.type == "organisation"
    ][:1]
    result = run_repl_synthesis(
        graph,
        repl_teacher,
        closed_book,
        seeds=seeds,
        store=store,
        config=SynthesisConfig(run_dir=str(tmp_path), max_edits=6),
    )
    assert result.accepted, [(s.trajectory.termination, s.trajectory.error, s.history) for s in result.syntheses]
    s = result.accepted[0]
    traj = store.get(s.trajectory.id)
    assert traj.role == "synthesizer" and traj.termination == "submitted"
    called = [c.name for st in traj.steps for c in st.host_calls]
    assert called[0] == "links" and "inject" in called and "verify" in called and called[-1] == "submit"
    assert traj.metadata["synthesis"]["accepted"] and traj.final_answer == s.qa.answer
    assert {k.role for k in store.children(traj.id)} == {"direct_solver"}
    assert result.qa_path.read_text().count("\n") == len(result.accepted)


def test_repl_tool_errors_are_recorded_not_raised(tmp_path, graph, site, closed_book):
    from workbench.policies.scripted import ScriptedPolicy

    turns = [
        "<think>x</think>\n<code>\nprint(verify())\n</code>",
        "<think>x</think>\n<code>\nprint(inject('Nobody', 'https://nowhere.test/', 'x'))\n</code>",
        "<think>x</think>\n<code>\nprint(fuzz(3))\n</code>",
        "<think>x</think>\n<code>\nsubmit()\n</code>",
    ]
    result = run_repl_synthesis(
        graph,
        ScriptedPolicy.from_turns(turns),
        closed_book,
        seeds=[site.url_for("Libra Works")],
        store=Store(tmp_path),
        config=SynthesisConfig(run_dir=str(tmp_path), max_edits=4),
    )
    [s] = result.syntheses
    errors = [c.error for st in s.trajectory.steps for c in st.host_calls if c.error]
    assert any("nothing to verify" in e for e in errors) and any("not named in the question" in e for e in errors)
    assert any("must be str" in e for e in errors)
    assert s.trajectory.termination == "submitted" and not s.accepted  # a seed is not a finished QA


@pytest.fixture(scope="module")
def tiny(site, tmp_path_factory):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from workbench.models.tiny import build_tiny_model, sample_texts
    from workbench.worlds import split_title

    texts = [split_title(p["contents"])[1] for p in site.world.corpus()] + sample_texts(50)
    path = build_tiny_model(tmp_path_factory.mktemp("tiny"), texts, vocab_size=600, n_embd=32, seed=0)
    return AutoModelForCausalLM.from_pretrained(path), AutoTokenizer.from_pretrained(path)


def spread_reward(traj) -> dict[str, float]:
    """Differs between rollouts (a random tiny model never answers right), plus exact match."""
    ids = traj.steps[0].completion_ids if traj.steps else []
    em = float(traj.final_answer in traj.task.golden_answers)
    return {"total": sum(ids) % 97 / 97 + em, "exact_match": em}


def test_synthesized_qas_drive_one_grpo_step(tmp_path, graph, site, closed_book, tiny):
    from workbench.evolve import trl_train_fn
    from workbench.evolve.asearcher import ASearcherConfig, run_asearcher
    from workbench.search import BM25Retriever, Corpus
    from workbench.synth import ScriptedSynthesizer
    from workbench.train import TrainConfig
    from workbench.worlds import load_qa

    model, tok = tiny
    before = {k: v.detach().clone() for k, v in model.named_parameters()}
    cfg = ASearcherConfig(
        run_dir=str(tmp_path / "as"),
        prompts_per_iteration=12,
        solver_attempts=4,
        solver_group_size=2,
        concurrency=2,
        progress=False,
        seed=1,
        solver_agent={"max_steps": 1, "max_new_tokens": 16, "max_context_tokens": 1800},
    )
    train_cfg = TrainConfig(
        max_steps=1,
        num_generations=2,
        per_device_train_batch_size=2,
        learning_rate=1e-3,
        max_completion_length=64,
        max_turns=1,
        max_turn_tokens=16,
        concurrency=2,
    )
    retriever = BM25Retriever.build(Corpus.from_rows(site.world.corpus()), show_progress=False)
    result = run_asearcher(
        cfg,
        graph=graph,
        synthesizer=ScriptedSynthesizer(),
        direct_policy=closed_book,
        retriever=retriever,
        train_fn=trl_train_fn(train_cfg, solver=(model, tok), rewards={"solver": spread_reward}),
    )
    [it] = result.iterations
    qa = load_qa(it.qa_path)
    assert it.qa_size == len(qa) > 0
    assert all(t.metadata["self_consistency"] <= 0.25 and t.metadata["hops"] >= 2 for t in qa)
    assert it.training["solver"]["global_step"] == 1
    assert any(not torch.equal(before[k], v) for k, v in model.named_parameters())
    assert it.metrics["synthesis/acceptance_rate"] > 0 and "evolve/difficulty" in it.metrics

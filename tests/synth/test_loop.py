"""The synthesis loop end to end: stored trajectories, linked attempts, qa.jsonl rows, malformed turns."""

from __future__ import annotations

import json

from workbench.policies.scripted import ScriptedPolicy
from workbench.store import Store
from workbench.synth import (
    PolicySynthesizer,
    ScriptedSynthesizer,
    SynthesisConfig,
    browse_answer,
    run_synthesis,
)
from workbench.worlds import load_qa


def test_run_synthesis_writes_verified_qas_and_linked_trajectories(tmp_path, graph, closed_book):
    store = Store(tmp_path)
    cfg = SynthesisConfig(run_dir=str(tmp_path), seeds=12, seed=1)
    result = run_synthesis(graph, ScriptedSynthesizer(), closed_book, config=cfg, store=store)
    assert result.accepted, result.stats()
    rows = [json.loads(line) for line in result.qa_path.read_text().splitlines()]
    assert len(rows) == len(result.accepted) and len(load_qa(result.qa_path)) == len(rows)
    for row, s in zip(rows, result.accepted, strict=True):
        meta = row["metadata"]
        assert row["golden_answers"] == [s.trajectory.final_answer]
        assert meta["hops"] >= 2 and len(meta["statements"]) == meta["hops"] and meta["urls"]
        assert meta["direct_accuracy"] <= cfg.max_direct_accuracy
        assert meta["edit_history"][0]["action"] == "seed"
        assert row["golden_answers"][0].lower() not in row["question"].lower()
        assert browse_answer(graph, row["question"]) == row["golden_answers"][0]  # answerable by browsing
    stored = store.query(role="synthesizer")
    assert len(stored) == 12
    for s in result.syntheses:
        t = store.get(s.trajectory.id)
        assert len(t.steps) == 1 + len(s.history) - 1 + sum(1 for st in t.steps if st.observation_text == "exit")
        kids = store.children(t.id)
        checked = sum(h.get("direct_accuracy") is not None for h in s.history)  # verifications that asked
        assert len(kids) == checked * cfg.direct_attempts and {k.role for k in kids} <= {"direct_solver"}
        assert all(k.task.metadata["edit"] < len(t.steps) for k in kids)
    assert (
        store.metrics(name="synthesis/acceptance_rate")["value"].iloc[0] == result.stats()["synthesis/acceptance_rate"]
    )


def test_malformed_synthesizer_output_is_a_recorded_failure(tmp_path, graph, closed_book):
    outputs = iter(
        [
            "no json here",
            '<action>{"action": "teleport"}</action>',
            "<action>{not json</action>",
            "\udcff" * 3,
            '<action>{"action": "inject", "target": "Nobody"}</action>',
        ]
        * 10
    )
    babbler = ScriptedPolicy(lambda _c, _t: next(outputs), name="babbler")
    cfg = SynthesisConfig(run_dir=str(tmp_path), seeds=2, max_edits=5)
    result = run_synthesis(graph, PolicySynthesizer(babbler), closed_book, config=cfg, store=Store(tmp_path))
    for s in result.syntheses:
        flags = [st.format_flags for st in s.trajectory.steps[1:]]
        assert flags and all(f in (["malformed_action"], ["bad_edit"]) for f in flags), flags
        assert not s.accepted and s.trajectory.termination == "max_steps"
    assert result.qa_path.read_text() == ""

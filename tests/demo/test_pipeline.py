"""One stage sequence runs every demo variant: `run_stages` calls the model's and the proposer's stages in one order
and writes summary.json once, with what each reports (fakes for the two strategies: the order is what is tested)."""

from __future__ import annotations

import json
from typing import Any

from workbench.demo.config import DemoConfig
from workbench.demo.pipeline import TITLES, DemoResult, Solver, Stages, run_stages


class FakeModel:
    name = "tiny"

    def __init__(self, calls: list[str]) -> None:
        self.calls = calls

    def check(self, cfg: DemoConfig, proposer: Any) -> None:
        self.calls.append("model.check")

    def solver_stages(self, st: Stages) -> Solver:
        with st.timed("1. solver"):
            self.calls.append("model.solver_stages")
        return Solver(model=None, tok=None, evals=[[{"hops": "all", "em": 0.25}]])

    def save_final(self, st: Stages, solver: Solver) -> None:
        self.calls.append("model.save_final")

    def final_eval(self, st: Stages, solver: Solver) -> None:
        self.calls.append("model.final_eval")
        solver.evals.append([{"hops": "all", "em": 0.5}])

    def report(self, st: Stages, solver: Solver, evolution: list[dict[str, Any]]) -> dict[str, Any]:
        return {"before": solver.evals[0], "after": solver.evals[-1]}

    def result(self, st: Stages, solver: Solver, evolution: list[dict[str, Any]]) -> DemoResult:
        return DemoResult(st.run, solver.evals[0], solver.evals[-1], evolution, st.seconds)

    def closing_lines(self, st: Stages, result: DemoResult) -> list[str]:
        return [f"done {result.accuracy('before')} -> {result.accuracy('after')}"]


class FakeProposer:
    name, learned = "learned", True

    def __init__(self, calls: list[str]) -> None:
        self.calls = calls

    def stages(self, st: Stages, solver: Solver) -> None:
        self.calls.append("proposer.stages")

    def evolve(self, st: Stages, solver: Solver) -> list[dict[str, Any]]:
        self.calls.append("proposer.evolve")
        return [{"iteration": 0, "qa_size": 3}]

    def save_final(self, st: Stages, solver: Solver) -> None:
        self.calls.append("proposer.save_final")

    def report(self, st: Stages, solver: Solver, evolution: list[dict[str, Any]]) -> dict[str, Any]:
        return {"proposer": "learned"}

    def closing_lines(self, st: Stages) -> list[str]:
        return ["checked"]


def test_every_variant_runs_the_one_stage_order_and_writes_one_summary(tmp_path):
    calls: list[str] = []
    lines: list[str] = []
    cfg = DemoConfig(run_dir=str(tmp_path / "run"), world_size="tiny")
    st = Stages(cfg, lines.append, fresh=True, model=FakeModel(calls), proposer=FakeProposer(calls))
    result = run_stages(st)
    assert calls == [
        "model.solver_stages",
        "proposer.stages",
        "proposer.evolve",
        "model.save_final",
        "proposer.save_final",
        "model.final_eval",
    ]
    header, evolve, final = TITLES[("tiny", "learned")]
    assert lines[0] == header.format(seed=0, passages=len(st.world.corpus()), run=st.run, eval_tasks=cfg.eval_tasks)
    assert list(st.seconds) == ["1. solver", evolve, final] and lines[-2:] == ["done 0.25 -> 0.5", "checked"]
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary == {
        "config": json.loads(json.dumps(cfg.to_dict())),
        "before": [{"hops": "all", "em": 0.25}],
        "after": [{"hops": "all", "em": 0.5}],
        "evolution": [{"iteration": 0, "qa_size": 3}],
        "proposer": "learned",
        "seconds": summary["seconds"],
    }
    assert list(summary["seconds"]) == list(st.seconds) and result.evolution == summary["evolution"]

"""The evolution dashboard shows a synthesis run's acceptance rate and difficulty."""

from __future__ import annotations

from workbench.store import Store
from workbench.synth import ScriptedSynthesizer, SynthesisConfig, run_synthesis
from workbench.widgets.evolution import EvolutionDashboard, synthesis_table


def test_dashboard_shows_synthesis_acceptance_and_difficulty(tmp_path, graph, closed_book):
    store = Store(tmp_path)
    result = run_synthesis(
        graph,
        ScriptedSynthesizer(),
        closed_book,
        store=store,
        config=SynthesisConfig(run_dir=str(tmp_path), seeds=10, seed=2),
    )
    table = synthesis_table(store)
    assert table["syntheses"].sum() == 10
    accepted = sum(table["acceptance_rate"] * table["syntheses"])
    assert round(accepted) == len(result.accepted)
    dash = EvolutionDashboard(store)
    assert {"synthesis_acceptance", "synthesis_difficulty"} <= set(dash.panes)
    ys = [y for trace in dash.panes["synthesis_difficulty"].figure.data for y in trace.y]
    assert ys and all(0.75 <= y <= 1.0 for y in ys)  # accepted QAs are answered by <= 25% of no-tool tries

"""Each seed's reward as a `RewardSpec` dict (see workbench/rewards/<seed>.py for the formulas)."""

from __future__ import annotations

from typing import Any

PRESETS: dict[str, dict[str, Any]] = {
    "search_r1": {
        "name": "search_r1", "description": "Search-R1: strict EM of the last <answer>",
        "components": [{"name": "em"}]},
    "drzero_solver": {
        "name": "drzero_solver", "description": "Dr. Zero solver: strict EM, no format reward",
        "components": [{"name": "em"}]},
    "drzero_proposer": {
        "name": "drzero_proposer",
        "description": "Dr. Zero proposer as coded: 0.5·format + difficulty (difficulty needs format>0)",
        "components": [{"name": "drzero.format", "weight": 0.5},
                       {"name": "drzero.difficulty", "weight": 1.0}]},
    "zerosearch": {
        "name": "zerosearch", "description": "ZeroSearch: token F1 (trained on), cover-EM reported",
        "components": [{"name": "f1"}, {"name": "cover_em", "weight": 0.0}]},
    "l0": {
        "name": "l0",
        "description": "L0: 0.8·(0.9·EM + 0.1·has_answer) + 0.1·format + 0.1·code, summed over steps",
        "components": [{"name": "l0.qa", "weight": 0.8}, {"name": "l0.format", "weight": 0.1},
                       {"name": "l0.code", "weight": 0.1}]},
    "l0_upstream": {
        "name": "l0_upstream",
        "description": "L0 with its code's has_answer (any string) and output-less cells scoring 0",
        "components": [{"name": "l0.qa", "weight": 0.8, "params": {"has_answer": "l0"}},
                       {"name": "l0.format", "weight": 0.1},
                       {"name": "l0.code", "weight": 0.1, "params": {"no_output": "zero"}}]},
    "agent0": {
        "name": "agent0",
        "description": "Agent0 curriculum as coded: min(p,1−p) − cluster share + 0.05·min(N,4); "
                       "no question → −1",
        "components": [{"name": "agent0.uncertainty", "params": {"variant": "code"}},
                       {"name": "agent0.repetition", "weight": -1.0},
                       {"name": "agent0.tool", "params": {"gamma": 0.05, "cap": 4}}],
        "gate": ["agent0.format"], "gate_fail": -1.0},
    "agent0_paper": {
        "name": "agent0_paper",
        "description": "Agent0 paper eq. 5: format·max(0, R_unc + 0.6·R_tool − R_rep) "
                       "(γ=0.05 from the code; the paper gives none)",
        "components": [{"name": "agent0.uncertainty", "params": {"variant": "paper"}},
                       {"name": "agent0.tool", "weight": 0.6, "params": {"gamma": 0.05, "cap": 4}},
                       {"name": "agent0.repetition", "weight": -1.0}],
        "gate": ["agent0.format"], "gate_fail": 0.0, "floor": 0.0},
    "asearcher": {
        "name": "asearcher", "description": "ASearcher: set-F1 × format",
        "components": [{"name": "asearcher.f1"}], "gate": ["asearcher.format"]},
}

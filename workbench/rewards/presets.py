"""Each seed's reward as a `RewardSpec` dict (see workbench/rewards/<seed>.py for the formulas)."""

from __future__ import annotations

from typing import Any

PRESETS: dict[str, dict[str, Any]] = {
    "search_r1": {
        "name": "search_r1",
        "description": "Search-R1: strict EM of the last <answer>",
        "components": [{"name": "em"}],
    },
    "drzero_solver": {
        "name": "drzero_solver",
        "description": "Dr. Zero solver: strict EM, no format reward",
        "components": [{"name": "em"}],
    },
    "drzero_proposer": {
        "name": "drzero_proposer",
        "description": "Dr. Zero proposer as coded: 0.5·format + difficulty (difficulty needs format>0)",
        "components": [
            {"name": "drzero.format", "weight": 0.5, "key": "format"},
            {"name": "drzero.difficulty", "weight": 1.0, "key": "difficulty"},
        ],
    },
    "zerosearch": {
        "name": "zerosearch",
        "description": "ZeroSearch: token F1 (trained on), cover-EM reported",
        "components": [{"name": "f1"}, {"name": "cover_em", "weight": 0.0}],
    },
    "l0": {
        "name": "l0",
        "description": "L0: 0.8·(0.9·EM + 0.1·has_answer) + 0.1·format + 0.1·code, summed over steps",
        "components": [
            {"name": "l0.qa", "weight": 0.8, "params": {"normalizer": "l0"}},
            {"name": "l0.format", "weight": 0.1},
            {"name": "l0.code", "weight": 0.1},
        ],
    },
    "l0_upstream": {
        "name": "l0_upstream",
        "description": "L0 with its code's has_answer (any string) and output-less cells scoring 0",
        "components": [
            {"name": "l0.qa", "weight": 0.8, "params": {"has_answer": "l0", "normalizer": "l0"}},
            {"name": "l0.format", "weight": 0.1},
            {"name": "l0.code", "weight": 0.1, "params": {"no_output": "zero"}},
        ],
    },
    "agent0": {
        "name": "agent0",
        "description": "Agent0 curriculum as coded: min(p,1−p) − cluster share + 0.05·min(N,4), N "
        "counted in the curriculum agent's own output; no question → −1",
        "components": [
            {"name": "agent0.uncertainty", "params": {"variant": "code"}},
            {"name": "agent0.repetition", "weight": -1.0},
            {"name": "agent0.tool", "params": {"gamma": 0.05, "cap": 4, "source": "self"}},
        ],
        "gate": ["agent0.format"],
        "gate_fail": -1.0,
    },
    "agent0_paper": {
        "name": "agent0_paper",
        "description": "Agent0 paper eq. 5: R_format·max(0, R_unc + 0.6·R_tool − R_rep), R_tool = "
        "0.05·min(N,4) over the executor's attempts (γ from the code)",
        "components": [
            {"name": "agent0.uncertainty", "params": {"variant": "paper"}},
            {"name": "agent0.tool", "weight": 0.6, "params": {"gamma": 0.05, "cap": 4, "source": "executor"}},
            {"name": "agent0.repetition", "weight": -1.0},
            {"name": "agent0.format", "weight": 0.0, "params": {"require_answer": True, "reject_leak": True}},
        ],
        "gate": ["agent0.format"],
        "gate_fail": 0.0,
        "floor": 0.0,
    },
    "agent0_executor": {
        "name": "agent0_executor",
        "description": "Agent0 executor: 1 when the answer equals the majority-vote pseudo-label",
        "components": [{"name": "em"}],
    },
    "asearcher": {
        "name": "asearcher",
        "description": "ASearcher: set-F1 (aug blend) × format, then −0.5 for an 'invalid' answer "
        "under the most-likely-answer instruction",
        "components": [
            {"name": "asearcher.reward"},
            {"name": "asearcher.f1", "weight": 0.0},
            {"name": "asearcher.format", "weight": 0.0},
        ],
    },
    "asearcher_judge": {
        "name": "asearcher_judge",
        "description": "ASearcher for reasoning models: the registered LLM judge's verdict × format",
        "components": [{"name": "llm_judge"}],
        "gate": ["asearcher.format"],
    },
}

"""`run_synthesis`: ASearcher's QA-synthesis loop over pages, with every edit verified.

    graph = PageGraph(LocalSiteFetcher(world_site(world))); graph.crawl(list(site.pages))
    result = run_synthesis(graph, ScriptedSynthesizer(), ClosedBookPolicy(graph), store=Store("runs/s"),
                           config=SynthesisConfig(run_dir="runs/s", seeds=16))
    result.qa_path           # runs/s/qa.jsonl: accepted QAs, Search-R1 rows with their statements, urls,
                             # direct accuracy, edit history and hop count in `metadata`

Per seed page: a seed QA from one of its facts (must be well-formed, supported and unique; its direct
accuracy is recorded), then up to `max_edits` turns. Each turn the synthesizer answers with an edit
(`inject` / `fuzz`) or `exit`; the edit is verified (`Verifier`) and kept only if it passes. Once a
kept question is answered right by no direct attempt, `exit` is allowed. A QA is accepted when it
has `min_hops` facts or more and its direct accuracy is at most `max_direct_accuracy`.

Each synthesis is stored as a trajectory (role "synthesizer"): step 0 the seed, then one step per
turn (its raw output, the edit, the verdict); a malformed turn is a step with a format flag. Every
direct attempt is a "direct_solver" trajectory whose lineage origin is the synthesis, so
`store.children(synthesis_id)` lists them.
"""

from __future__ import annotations

import json
import random
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from workbench.errors import ConfigError, ToolError
from workbench.synth.config import SynthesisConfig
from workbench.synth.edits import apply_edit, edit_options, seed_qa
from workbench.synth.pages import PageGraph
from workbench.synth.qa import SynthQA
from workbench.synth.synthesizers import Synthesizer, parse_action
from workbench.synth.verify import DirectSolver, Verdict, Verifier
from workbench.trajectory import Step, Task, Termination, Trajectory

if TYPE_CHECKING:
    from workbench.policies.base import Policy
    from workbench.store import Store


# -- one synthesis ------------------------------------------------------------------------------
@dataclass
class Synthesis:
    """What one synthesis produced; `trajectory` is what the store holds."""

    trajectory: Trajectory
    qa: SynthQA | None
    accepted: bool
    direct_accuracy: float | None
    seed_direct_accuracy: float | None
    history: list[dict[str, Any]]
    attempts: list[Trajectory] = field(default_factory=list)

    def row(self) -> dict[str, Any]:
        """The Search-R1 QA row of an accepted synthesis."""
        assert self.qa is not None
        qa = self.qa
        return {
            "id": f"synth-{self.trajectory.id[:12]}",
            "question": qa.question,
            "golden_answers": [qa.answer],
            "data_source": "asearcher_synth",
            "metadata": {
                "source": "synthesis",
                "hops": qa.hops,
                "statements": [s.to_dict() for s in qa.statements],
                "urls": qa.urls,
                "direct_accuracy": self.direct_accuracy,
                "seed_direct_accuracy": self.seed_direct_accuracy,
                "edit_history": self.history,
                "answer_url": qa.answer_url,
                "tree": qa.to_dict()["tree"],
                "origin": self.trajectory.id,
                "iteration": self.trajectory.metadata.get("iteration", 0),
            },
        }


def attempt_trajectories(
    verdict: Verdict, qa: SynthQA, origin: str, step: int, run_id: str, policy_name: str
) -> list[Trajectory]:
    """One "direct_solver" trajectory per direct attempt of a verification, linked to `origin`."""
    out = []
    for j, a in enumerate(verdict.attempts):
        task = Task(
            id=f"{origin[:12]}-e{step}-a{j}",
            question=qa.question,
            golden_answers=[qa.answer],
            metadata={"origin": origin, "edit": step, "attempt": j, "hops": qa.hops, "source": "synthesis"},
        )
        t = Trajectory(
            task=task,
            run_id=run_id,
            role="direct_solver",
            lineage={"origin": origin, "policy": policy_name},
            steps=[
                Step(
                    0,
                    a.text,
                    format_flags=list(a.flags),
                    completion_ids=a.completion_ids,
                    logprobs=a.logprobs,
                    finish_reason="stop",
                )
            ],
            final_answer=a.answer,
            termination="submitted" if a.answer is not None else "error",
            error=None if a.answer is not None else "no <answer> tag in the output",
            rewards={"exact_match": float(a.correct), "total": float(a.correct)},
            reward_spec="em",
        )
        t.ended_at = time.time()
        out.append(t)
    return out


def _step(
    index: int,
    raw: str,
    action: dict[str, Any] | None,
    verdict: Verdict | None,
    qa: SynthQA | None,
    flags: list[str],
    note: str = "",
) -> Step:
    kept = bool(verdict and verdict.ok)
    obs = note or (verdict.summary() if verdict else "")
    return Step(
        index,
        raw,
        think=json.dumps(action) if action else None,
        format_flags=flags,
        observation_text=obs,
        notepad={
            "question": qa.question if qa else "",
            "hops": qa.hops if qa else 0,
            "kept": kept,
            "reason": verdict.reason if verdict else (flags[0] if flags else None),
            "direct_accuracy": verdict.direct_accuracy if verdict else None,
        },
    )


SYNTHESIS_SEED_STRIDE = 1_000_003
"""Synthesis `index` of a run seeded s draws its seed page's question from s * SYNTHESIS_SEED_STRIDE + index:
a prime stride, so runs seeded s and s + 1 share no synthesis's draw below a million syntheses."""


def synthesize_one(
    graph: PageGraph,
    url: str,
    synthesizer: Synthesizer,
    verifier: Verifier,
    config: SynthesisConfig,
    *,
    run_id: str = "",
    index: int = 0,
) -> Synthesis:
    """One synthesis from the page at `url` (see the module docstring). Never raises for model output."""
    rng = random.Random(config.seed * SYNTHESIS_SEED_STRIDE + index)
    traj = Trajectory(
        task=Task(id=f"synth-{index}", question="", golden_answers=[]),
        run_id=run_id,
        role="synthesizer",
        lineage={"policy": synthesizer.name, "seed_url": url},
        metadata={"iteration": config.iteration, "seed_url": url},
    )
    log = _Log(traj, run_id, getattr(getattr(verifier.direct, "policy", None), "name", ""))
    try:
        qa = seed_qa(graph, url, rng=rng)
    except ToolError as exc:
        traj.steps.append(
            _step(0, json.dumps({"action": "seed", "url": url}), None, None, None, ["seed_failed"], str(exc))
        )
        return _finish(traj, None, False, None, None, log.history, log.attempts, "error", str(exc))
    traj.task = Task(
        id=f"synth-{traj.id[:12]}",
        question=qa.question,
        golden_answers=[qa.answer],
        metadata={"hops": qa.hops, "seed_url": url, "source": "synthesis", "iteration": config.iteration},
    )
    verdict = _check_seed(log, url, qa, verifier)
    seed_ok, seed_acc = verdict.ok or verdict.reason == "too_easy", verdict.direct_accuracy
    if not seed_ok:
        return _finish(traj, qa, False, seed_acc, seed_acc, log.history, log.attempts, "error", verdict.detail)
    qa, accuracy = _edit_turns(log, graph, qa, seed_acc, synthesizer, verifier, config)
    accepted = qa.hops >= config.min_hops and accuracy is not None and accuracy <= config.max_direct_accuracy
    return _finish(
        traj, qa, accepted, accuracy, seed_acc, log.history, log.attempts, "submitted" if accepted else "max_steps"
    )


@dataclass
class _Log:
    """What one synthesis records as it goes: its steps (on `traj`), the edit history, the direct attempts."""

    traj: Trajectory
    run_id: str
    policy_name: str
    history: list[dict[str, Any]] = field(default_factory=list)
    attempts: list[Trajectory] = field(default_factory=list)

    def record(self, verdict: Verdict | None, qa: SynthQA | None) -> None:
        """The verifier's direct attempts at `qa`, as trajectories linked to the latest step."""
        if verdict is not None and qa is not None and verdict.attempts:
            self.attempts.extend(
                attempt_trajectories(verdict, qa, self.traj.id, len(self.traj.steps) - 1, self.run_id, self.policy_name)
            )


def _check_seed(log: _Log, url: str, qa: SynthQA, verifier: Verifier) -> Verdict:
    """Verify the seed question and record the seed step; a seed that is only too easy is kept."""
    verdict = verifier.check(qa, qa.statements)
    seed_ok = verdict.ok or verdict.reason == "too_easy"
    seed_acc = verdict.direct_accuracy
    log.traj.steps.append(
        _step(
            0,
            json.dumps({"action": "seed", "url": url}),
            {"action": "seed", "url": url},
            verdict,
            qa,
            [],
            "seed "
            + ("kept" if seed_ok else verdict.summary())
            + ("" if seed_acc is None else f"; direct accuracy {seed_acc:.2f}"),
        )
    )
    log.record(verdict, qa)
    log.history.append(
        {
            "action": "seed",
            "url": url,
            "question": qa.question,
            "kept": seed_ok,
            "reason": None if seed_ok else verdict.reason,
            "direct_accuracy": seed_acc,
        }
    )
    return verdict


def _edit_turns(
    log: _Log,
    graph: PageGraph,
    qa: SynthQA,
    accuracy: float | None,
    synthesizer: Synthesizer,
    verifier: Verifier,
    config: SynthesisConfig,
) -> tuple[SynthQA, float | None]:
    """Up to `max_edits` turns: the synthesizer picks an edit, a verified edit replaces the QA. Returns the
    final QA and its direct accuracy."""
    rejected: list[dict[str, Any]] = []
    for turn in range(1, config.max_edits + 1):
        ready = accuracy is not None and accuracy == 0.0 and qa.hops >= config.min_hops
        raw, action = _choose_action(log, turn, graph, qa, synthesizer, ready, rejected)
        if action is None:
            continue
        if action["action"] == "exit":
            log.traj.steps.append(_step(turn, raw, action, None, qa, [], "exit"))
            break
        try:
            candidate = apply_edit(graph, qa, action)
        except ToolError as exc:
            log.traj.steps.append(_step(turn, raw, action, None, qa, ["bad_edit"], str(exc)))
            log.history.append({**action, "kept": False, "reason": "malformed"})
            rejected.append(action)
            continue
        verdict = verifier.check(candidate, candidate.statements[len(qa.statements) :])
        log.traj.steps.append(_step(turn, raw, action, verdict, candidate, []))
        log.record(verdict, candidate)
        log.history.append(
            {
                **action,
                "question": candidate.question,
                "kept": verdict.ok,
                "reason": verdict.reason,
                "direct_accuracy": verdict.direct_accuracy,
            }
        )
        if verdict.ok:
            qa, accuracy, rejected = candidate, verdict.direct_accuracy, []
        else:
            rejected.append(action)
    return qa, accuracy


def _choose_action(
    log: _Log,
    turn: int,
    graph: PageGraph,
    qa: SynthQA,
    synthesizer: Synthesizer,
    ready: bool,
    rejected: list[dict[str, Any]],
) -> tuple[str, dict[str, Any] | None]:
    """The synthesizer's turn text and its action; None (the failed turn recorded) when the synthesizer
    fails to answer or writes no valid action."""
    try:
        options = edit_options(graph, qa)
        raw = synthesizer.choose(qa, options, ready, rejected)
    except Exception as exc:  # a synthesizer model that fails to answer: a failed turn
        log.traj.steps.append(_step(turn, "", None, None, qa, ["synthesizer_error"], f"{type(exc).__name__}: {exc}"))
        log.history.append({"action": None, "kept": False, "reason": "synthesizer_error"})
        return "", None
    action = parse_action(raw)
    if action is None:
        log.traj.steps.append(
            _step(
                turn, raw, None, None, qa, ["malformed_action"], "no valid <action>{json}</action>: the turn is skipped"
            )
        )
        log.history.append({"action": None, "kept": False, "reason": "malformed"})
    return raw, action


def _finish(
    traj: Trajectory,
    qa: SynthQA | None,
    accepted: bool,
    accuracy: float | None,
    seed_acc: float | None,
    history: list[dict[str, Any]],
    attempts: list[Trajectory],
    termination: Termination,
    error: str | None = None,
) -> Synthesis:
    traj.final_answer = qa.answer if qa else None
    traj.termination, traj.error, traj.ended_at = termination, error if not accepted else None, time.time()
    difficulty = 1.0 - accuracy if accuracy is not None else 0.0
    traj.rewards = {"accepted": float(accepted), "difficulty": difficulty, "total": float(accepted) * difficulty}
    traj.reward_spec = "synthesis"
    traj.metadata["synthesis"] = {
        "accepted": accepted,
        "direct_accuracy": accuracy,
        "seed_direct_accuracy": seed_acc,
        "edits": len(history) - 1,
        "kept_edits": sum(bool(h.get("kept")) for h in history[1:]),
        "hops": qa.hops if qa else 0,
        "qa": qa.to_dict() if qa else None,
        "edit_history": history,
    }
    if qa is not None:
        traj.metadata["question"] = qa.question
        traj.task.metadata["hops"] = qa.hops
    return Synthesis(traj, qa, accepted, accuracy, seed_acc, history, attempts)


# -- the run ------------------------------------------------------------------------------------
@dataclass
class SynthesisResult:
    qa_path: Path
    syntheses: list[Synthesis]

    @property
    def accepted(self) -> list[Synthesis]:
        return [s for s in self.syntheses if s.accepted]

    @property
    def rows(self) -> list[dict[str, Any]]:
        return [s.row() for s in self.accepted]

    def stats(self) -> dict[str, float]:
        n, acc = len(self.syntheses), self.accepted
        edits = [h for s in self.syntheses for h in s.history[1:]]
        return {
            "synthesis/count": float(n),
            "synthesis/acceptance_rate": len(acc) / max(n, 1),
            "synthesis/edit_keep_rate": sum(bool(h.get("kept")) for h in edits) / max(len(edits), 1),
            "synthesis/difficulty": sum(1 - (s.direct_accuracy or 0.0) for s in acc) / max(len(acc), 1),
            "synthesis/hops": sum(s.qa.hops for s in acc if s.qa) / max(len(acc), 1),
        }


def run_synthesis(
    graph: PageGraph,
    synthesizer: Synthesizer,
    direct_policy: Policy,
    *,
    seeds: list[str] | None = None,
    config: SynthesisConfig | None = None,
    store: Store | None = None,
    verifier: Verifier | None = None,
) -> SynthesisResult:
    """Synthesize from each seed url (default: `config.seeds` random entity pages of `graph`)."""
    config = config or SynthesisConfig()
    config.validate()
    if seeds is None:
        pages = graph.urls
        if not pages:
            raise ConfigError("the page graph knows no pages with facts; call graph.crawl([start_url]) first")
        seeds = random.Random(config.seed).sample(pages, min(config.seeds, len(pages)))
    verifier = verifier or Verifier(
        graph,
        DirectSolver(direct_policy, n=config.direct_attempts, temperature=config.direct_temperature, seed=config.seed),
        max_direct_accuracy=config.max_direct_accuracy,
    )
    run_id = config.resolved_run_id
    out: list[Synthesis] = []
    from tqdm.auto import tqdm

    for i, url in enumerate(tqdm(seeds, desc="synthesis", unit="qa", disable=len(seeds) < 4)):
        s = synthesize_one(graph, url, synthesizer, verifier, config, run_id=run_id, index=i)
        if store is not None:
            store.write(s.trajectory)
            if s.attempts:
                store.write_many(s.attempts)
        out.append(s)
    run_dir = Path(config.run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    result = SynthesisResult(run_dir / "qa.jsonl", out)
    write_qa(result.qa_path, result.rows)
    if store is not None:
        store.log_metrics(run_id, config.iteration, result.stats())
    return result


def write_qa(path: Path, rows: list[dict[str, Any]]) -> Path:
    with Path(path).open("w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False, default=str) + "\n")
    return Path(path)


__all__ = [
    "Synthesis",
    "SynthesisResult",
    "attempt_trajectories",
    "run_synthesis",
    "synthesize_one",
    "write_qa",
]

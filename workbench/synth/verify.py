"""The gate every edit passes before it is kept (ASearcher's quality checks), cheapest first:

1. `leak`         the answer is not in the question;
2. `unsupported`  every new statement is stated on the page it cites;
3. `ambiguous` / `unanswerable`  the description, resolved over the pages, fits the answer and
                  nothing else (ASearcher's alternative-answer check, done exactly);
4. `too_easy`     a solver without tools, asked `n` times, is right at most `max_direct_accuracy`.

    verifier = Verifier(graph, DirectSolver(policy, n=8), max_direct_accuracy=0.25)
    verdict = verifier.check(candidate, new_statements)
    verdict.ok, verdict.reason, verdict.direct_accuracy, verdict.attempts

A direct attempt whose output is malformed (no `<answer>` tag) counts as wrong and is flagged; a
policy that fails to generate makes the verdict `solver_error`. Nothing here raises for model output.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from workbench.blocking import run_blocking
from workbench.rewards.agent0 import answer_leaks
from workbench.rewards.text import exact_match, extract_answer
from workbench.safetext import safe_text
from workbench.synth.pages import PageGraph, norm
from workbench.synth.qa import Statement, SynthQA
from workbench.templates import prompt_template

if TYPE_CHECKING:
    from workbench.policies.base import Policy

REASONS = ("leak", "unsupported", "ambiguous", "unanswerable", "too_easy", "solver_error", "malformed")
CALL_SEED_STRIDE = 1000
"""Call c of a `DirectSolver` samples with seed + c * CALL_SEED_STRIDE (its n attempts take + 0..n-1 on top,
one per row), so two calls draw apart while n stays under 1000."""


@dataclass
class Attempt:
    """One direct (no-tool) answer."""

    text: str
    answer: str | None
    correct: bool
    flags: list[str] = field(default_factory=list)
    completion_ids: list[int] = field(default_factory=list)
    logprobs: list[float] | None = None


@dataclass
class Verdict:
    ok: bool
    reason: str | None = None  # one of REASONS when not ok
    detail: str = ""
    direct_accuracy: float | None = None
    attempts: list[Attempt] = field(default_factory=list)
    candidates: list[str] = field(default_factory=list)  # what the description fits (labels)

    def summary(self) -> str:
        acc = "" if self.direct_accuracy is None else f"; direct accuracy {self.direct_accuracy:.2f}"
        return ("kept" if self.ok else f"rejected ({self.reason}: {self.detail})") + acc

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "reason": self.reason,
            "detail": self.detail,
            "direct_accuracy": self.direct_accuracy,
            "candidates": self.candidates,
            "answers": [a.answer for a in self.attempts],
        }


def direct_prompt(question: str) -> str:
    return prompt_template("workbench.synth", "direct.j2").render(question=question).strip()


class DirectSolver:
    """`n` answers from `policy` without tools (ASearcher: n = 8 at temperature 0.6), judged by EM."""

    def __init__(
        self, policy: Policy, *, n: int = 8, temperature: float = 0.6, max_new_tokens: int = 128, seed: int = 0
    ) -> None:
        if n < 1:
            raise ValueError("DirectSolver needs n >= 1 attempts")
        self.policy, self.n, self.temperature, self.max_new_tokens, self.seed = (
            policy,
            n,
            temperature,
            max_new_tokens,
            seed,
        )
        self.calls = 0

    def attempts(self, question: str, golden: Sequence[str]) -> list[Attempt]:
        """The `n` attempts; raises only when the policy itself fails to generate."""
        from workbench.policies.base import SamplingParams

        self.calls += 1
        prompt = self.policy.codec.chat([{"role": "user", "content": direct_prompt(question)}])
        params = SamplingParams(
            max_new_tokens=self.max_new_tokens,
            temperature=self.temperature,
            seed=self.seed + self.calls * CALL_SEED_STRIDE,
        )
        completions = run_blocking(self.policy.generate([list(prompt)] * self.n, params))
        out = []
        for c in completions:
            text = safe_text(c.text or "")
            answer = extract_answer(text)
            flags = [] if answer is not None else ["no_answer_tag"]
            out.append(
                Attempt(
                    text,
                    answer,
                    bool(answer is not None and exact_match(answer, list(golden))),
                    flags,
                    list(c.token_ids or []),
                    c.logprobs,
                )
            )
        return out


class Verifier:
    """The checks of the module docstring over `graph`; `direct=None` skips the difficulty check."""

    def __init__(self, graph: PageGraph, direct: DirectSolver | None, *, max_direct_accuracy: float = 0.25) -> None:
        self.graph, self.direct, self.max_direct_accuracy = graph, direct, max_direct_accuracy

    def supported(self, st: Statement) -> str | None:
        """None if the page at `st.url` states `st`; else why not."""
        try:
            info = self.graph.info(st.url)
        except Exception as exc:  # an unreachable page supports nothing
            return f"cannot open {st.url}: {exc}"
        said = norm(st.text)
        if not said or not any(said == norm(s) or said in norm(s) for s in info.sentences):
            return f"{st.url} does not state {st.text!r}"
        if (
            st.key
            and not any(norm(f.value) == norm(st.value) for f in info.values(st.key))
            and norm(st.value) not in said
        ):
            return f"{st.url} gives no {st.key} {st.value!r}"
        return None

    def structure(self, qa: SynthQA, new: Sequence[Statement] = ()) -> Verdict | None:
        """Checks 1–3; a rejecting Verdict, or None when they pass."""
        if not qa.question.strip() or not qa.answer.strip():
            return Verdict(False, "malformed", "empty question or answer")
        if answer_leaks(qa.question, qa.answer):
            return Verdict(False, "leak", f"the answer {qa.answer!r} is in the question")
        for st in new:
            why = self.supported(st)
            if why:
                return Verdict(False, "unsupported", why)
        fits = self.graph.resolve(qa.tree)
        target = qa.answer_url or norm(qa.answer)
        labels = sorted(self.graph.label(t) for t in fits)
        if target not in fits:
            return Verdict(
                False,
                "unanswerable",
                f"the description fits {labels or 'nothing'}, not {qa.answer!r}",
                candidates=labels,
            )
        if len(fits) > 1:
            others = [x for x in labels if norm(x) != norm(qa.answer)]
            return Verdict(False, "ambiguous", f"also fits {others[:5]}", candidates=labels)
        return None

    def check(self, qa: SynthQA, new: Sequence[Statement] = ()) -> Verdict:
        """Every check; `new` are the statements the edit added (the older ones passed before)."""
        bad = self.structure(qa, new)
        if bad is not None:
            return bad
        if self.direct is None:
            return Verdict(True, candidates=[qa.answer])
        try:
            attempts = self.direct.attempts(qa.question, [qa.answer])
        except Exception as exc:  # the solver model failed: the edit is not kept, the run goes on
            return Verdict(False, "solver_error", f"{type(exc).__name__}: {exc}")
        acc = sum(a.correct for a in attempts) / len(attempts)
        if acc > self.max_direct_accuracy:
            return Verdict(
                False,
                "too_easy",
                f"{sum(a.correct for a in attempts)}/{len(attempts)} direct "
                f"answers are right (max {self.max_direct_accuracy:g})",
                acc,
                attempts,
                [qa.answer],
            )
        return Verdict(True, None, "", acc, attempts, [qa.answer])


def seeded(key: str, seed: int) -> random.Random:
    import zlib

    return random.Random(zlib.crc32(f"{seed}|{key}".encode()))


__all__ = ["REASONS", "Attempt", "DirectSolver", "Verdict", "Verifier", "direct_prompt", "seeded"]

"""Simulated search (ZeroSearch): a model writes the documents, useful or noisy on a curriculum.

Each search call renders the ZeroSearch template (`prompts/zerosearch_simulate.txt`, paper
Table 2: query, the task's question and gold answer, "useful" or "noisy") and asks the policy for
five ~30-word documents. Whether a call is noisy is drawn per call with probability

    p_i = p_s + (b^(i/m) - 1) / (b - 1) · (p_e - p_s)        (ZeroSearch eq. 1; p_e once i >= m)

where i is the training step (`sim.step`) and m = `total_steps`. `WorkbenchGRPOTrainer` calls
`set_training_step(i)` before the rollouts of optimizer step i (1-based, as ZeroSearch's verl loop
counts), so those rollouts draw with p_i; the last step (i = m) uses p_e.

The prompt names the task's question and its answer; with several gold answers the first is used
(ZeroSearch passes `golden_answers[0]`). Every call is logged in `sim.calls` with its step, p, whether
it was noisy, the task id, the prompt and the raw output; each hit carries `noisy` and, in its
`document`, `p`.

    sim = SimulatedSearch(policy, p_start=0.0, p_end=0.5, total_steps=200, seed=0)
    sim.set_training_step(120)
    hits = sim.search("Varnholt founder", question="Who founded Varnholt?", answer="Ada Brell")
    hits[0].noisy, sim.calls[-1].p
    tool = sim.for_task(task.question, task.golden_answers, task_id=task.id)   # a Retriever for one task
"""

from __future__ import annotations

import random
import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from workbench.blocking import run_blocking
from workbench.errors import ConfigError, PolicyError
from workbench.passages import join_contents
from workbench.policies.base import Policy, SamplingParams
from workbench.search.hits import Hit, RetrieverBase, check_queries

PROMPT_FILE = Path(__file__).parent / "prompts" / "zerosearch_simulate.txt"
NUMBER_WORDS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten"]
EMPTY_TEXT = "No results found."


def noise_probability(step: int, total_steps: int, p_start: float, p_end: float, b: float = 4.0) -> float:
    """ZeroSearch's curriculum: P(noisy) at training step `step` of `total_steps`."""
    if total_steps <= 0:
        raise ConfigError(f"total_steps must be positive, got {total_steps}")
    if b <= 0:
        raise ConfigError(f"the exponential base b must be > 0, got {b}")
    frac = min(max(step, 0) / total_steps, 1.0)
    ramp = frac if b == 1 else (b**frac - 1) / (b - 1)  # b -> 1 is the linear limit
    return p_start + ramp * (p_end - p_start)


_DOC_MARK = re.compile(
    r"(?im)^[ \t>*#-]*(?:\**\s*(?:doc(?:ument)?|result)\s*#?\s*(\d+)\s*\**\s*[:.)\-]?\**|(\d{1,2})[.)](?=\s))[ \t]*"
)
_TITLE = re.compile(r"^\s*\(?\s*title\s*:\s*(.+?)\s*(?:\)|\n|$)", re.I)


def parse_documents(output: str, top_k: int) -> tuple[list[tuple[str, str]], bool]:
    """Split model output into up to `top_k` (title, text) documents.

    Recognises `Doc 1: ...`, `Document 2.`, `**Doc 3**`, `1. ...` markers, and an optional
    `(Title: t)` / `Title: t` lead. Fallback when there are no markers (returned `ok=False`):
    blank-line-separated paragraphs, else the whole text as one document, else one document
    reading "No results found.".
    """
    text = re.sub(r"\n\s*\n+", "\n\n", output.strip())  # ZeroSearch collapses blank lines too
    marks = list(_DOC_MARK.finditer(text))
    ok = bool(marks)
    if marks:
        chunks = [
            text[m.end() : nxt.start() if nxt else len(text)] for m, nxt in zip(marks, [*marks[1:], None], strict=True)
        ]
    else:
        chunks = [p for p in text.split("\n\n") if p.strip()] or [text]
    docs = []
    for chunk in chunks:
        chunk = chunk.strip()
        if not chunk:
            continue
        title = ""
        m = _TITLE.match(chunk)
        if m:
            title, chunk = m.group(1).strip(), chunk[m.end() :].strip()
        docs.append((title, " ".join(chunk.split())))
        if len(docs) == top_k:
            break
    if not docs:
        return [("", EMPTY_TEXT)], False
    return docs, ok


@dataclass
class SimulatedCall:
    """One simulated search call, as logged in `SimulatedSearch.calls`."""

    step: int
    p: float  # P(noisy) at this step
    noisy: bool
    query: str
    question: str
    answer: str
    prompt: str
    output: str  # the model's raw text
    parsed_ok: bool  # False when the fallback split was used
    n_docs: int
    task_id: str = ""

    @property
    def useful(self) -> bool:
        return not self.noisy


class SimulatedSearch(RetrieverBase):
    """A `Retriever` whose documents come from `policy` (see module docstring)."""

    def __init__(
        self,
        policy: Policy,
        *,
        p_start: float = 0.0,
        p_end: float = 0.5,
        b: float = 4.0,
        total_steps: int,
        seed: int | None = 0,
        top_k: int = 5,
        template: str | Path | None = None,
        sampling: SamplingParams | None = None,
    ):
        for name, p in (("p_start", p_start), ("p_end", p_end)):
            if not 0.0 <= p <= 1.0:
                raise ConfigError(f"{name} is a probability; got {p}")
        noise_probability(0, total_steps, p_start, p_end, b)  # validates total_steps and b
        self.policy = policy
        self.p_start, self.p_end, self.b, self.total_steps = p_start, p_end, b, total_steps
        self.top_k = top_k
        self.template = Path(template).read_text() if template else PROMPT_FILE.read_text()
        self.sampling = sampling or SamplingParams(max_new_tokens=600, temperature=0.8)  # ZeroSearch's
        self.step = 0
        self.calls: list[SimulatedCall] = []
        self._rng = random.Random(seed)
        self._lock = threading.Lock()

    def set_training_step(self, step: int) -> None:
        """The curriculum's i: the optimizer step whose rollouts come next."""
        with self._lock:
            self.step = int(step)

    @property
    def p(self) -> float:
        """P(noisy) at the current step."""
        return noise_probability(self.step, self.total_steps, self.p_start, self.p_end, self.b)

    def prompt(self, query: str, question: str, answer: str, noisy: bool, top_k: int) -> str:
        kind = "noisy" if noisy else "useful"
        count = NUMBER_WORDS[top_k] if top_k < len(NUMBER_WORDS) else str(top_k)
        return self.template.rstrip("\n").format(
            count=count, kind=kind, Kind=kind.capitalize(), question=question, answer=answer, query=query
        )

    async def aretrieve(
        self,
        queries: list[str],
        top_k: int | None = None,
        *,
        question: str | Sequence[str] = "",
        answer: str | Sequence[str] = "",
        task_id: str = "",
    ) -> list[list[Hit]]:
        """Generate documents for each query (one batched `generate` call)."""
        k = top_k or self.top_k
        queries = check_queries(queries, k)
        questions = [question] * len(queries) if isinstance(question, str) else list(question)
        answers = [answer] * len(queries) if isinstance(answer, str) else list(answer)
        if not len(questions) == len(answers) == len(queries):
            raise ConfigError("give one question and one answer per query (or a single string for all)")
        with self._lock:
            step, p = self.step, self.p
            noisy = [self._rng.random() < p for _ in queries]
        prompts = [self.prompt(q, qs, a, n, k) for q, qs, a, n in zip(queries, questions, answers, noisy, strict=True)]
        ids = [self.policy.codec.chat([{"role": "user", "content": pr}]) for pr in prompts]
        outs = await self.policy.generate(ids, self.sampling)
        if len(outs) != len(prompts):
            raise PolicyError(
                f"policy {self.policy.name!r} returned {len(outs)} completions for {len(prompts)} prompts"
            )
        results = []
        for q, qs, a, n, pr, out in zip(queries, questions, answers, noisy, prompts, outs, strict=True):
            docs, ok = parse_documents(out.text, k)
            with self._lock:
                call_no = len(self.calls)
                self.calls.append(SimulatedCall(step, p, n, q, qs, a, pr, out.text, ok, len(docs), task_id))
            results.append([_sim_hit(call_no, j, t, x, n, p) for j, (t, x) in enumerate(docs)])
        return results

    def retrieve(
        self,
        queries: list[str],
        top_k: int | None = None,
        *,
        question: str | Sequence[str] = "",
        answer: str | Sequence[str] = "",
        task_id: str = "",
    ) -> list[list[Hit]]:
        return run_blocking(self.aretrieve(queries, top_k, question=question, answer=answer, task_id=task_id))

    def search(
        self,
        query: str,
        top_k: int | None = None,
        *,
        question: str = "",
        answer: str = "",
        task_id: str = "",
    ) -> list[Hit]:
        return self.retrieve([query], top_k, question=question, answer=answer, task_id=task_id)[0]

    def for_task(self, question: str, answers: str | Sequence[str], task_id: str = "") -> TaskSearch:
        """A plain `Retriever` for one task's rollouts, sharing the curriculum and call log. With a list
        of gold answers the prompt names the first (ZeroSearch's `golden_answers[0]`)."""
        if not isinstance(answers, str):
            answers = str(next(iter(answers), ""))
        return TaskSearch(self, question, answers, task_id)

    def noisy_fraction(self) -> float:
        return sum(c.noisy for c in self.calls) / len(self.calls) if self.calls else 0.0


class TaskSearch(RetrieverBase):
    """`SimulatedSearch` bound to one task's question and answer (`SimulatedSearch.for_task`)."""

    def __init__(self, sim: SimulatedSearch, question: str, answer: str, task_id: str = ""):
        self.sim, self.question, self.answer, self.task_id = sim, question, answer, task_id

    def retrieve(self, queries: list[str], top_k: int = 5) -> list[list[Hit]]:
        return self.sim.retrieve(queries, top_k, question=self.question, answer=self.answer, task_id=self.task_id)

    async def aretrieve(self, queries: list[str], top_k: int = 5) -> list[list[Hit]]:
        return await self.sim.aretrieve(
            queries, top_k, question=self.question, answer=self.answer, task_id=self.task_id
        )


def _sim_hit(call_no: int, j: int, title: str, text: str, noisy: bool, p: float) -> Hit:
    hid = f"sim-{call_no}-{j}"
    contents = join_contents(title, text)
    return Hit(
        id=hid,
        title=title,
        text=text,
        score=0.0,
        contents=contents,
        document={"id": hid, "contents": contents, "noisy": noisy, "p": p},
        noisy=noisy,
    )

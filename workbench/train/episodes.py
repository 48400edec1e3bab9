"""Search-R1-style tool episodes: generate → `<search>q</search>` → `<information>…</information>` → … → `<answer>`.

    runner = SearchR1Episodes(retriever, max_turns=4, max_turn_tokens=64)
    trajectories = await runner(tasks, policy)          # an episode runner: (tasks, policy) -> [Trajectory]

Token-exact: each turn appends the sampled ids as they came back from the policy, and the
observation is encoded once and appended as observation ids (mask 0 in training). All live
episodes generate together in one batched `policy.generate` call per turn.

The retriever is any object with `search(query, top_k)` returning hits with `.title`/`.text`
(or dicts with those keys, or Search-R1 rows `{"contents": "Title\\ntext"}`), or a plain callable
`(query, top_k) -> hits`. A retriever with `for_task(question, answers, task_id)` (ZeroSearch's
`SimulatedSearch`) is bound to each episode's task, so the simulator's prompt carries the question
and gold answer; one with `set_training_step` is exposed in `curricula` for the trainer to advance.
Each search is recorded as a `HostCall`; a simulated hit's `noisy` and `p` are kept in its result.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from workbench.passages import split_contents
from workbench.policies.base import Policy, SamplingParams
from workbench.templates import prompt_template
from workbench.trajectory import HostCall, Step, Task, Trajectory

if TYPE_CHECKING:
    from workbench.search.hits import Retriever

SEARCH_RE = re.compile(r"<search>(.*?)</search>", re.DOTALL)
ANSWER_RE = re.compile(r"<answer>(.*?)</answer>", re.DOTALL)
STOPS = ["</search>", "</answer>"]


def hit_fields(hit: Any) -> tuple[str, str]:
    """(title, text) of one retriever hit in any of the accepted shapes."""
    if isinstance(hit, dict):
        if "contents" in hit and "text" not in hit:
            return split_contents(str(hit["contents"]))
        doc = hit.get("document", hit)
        return str(doc.get("title", "")), str(doc.get("text", doc.get("contents", "")))
    return str(getattr(hit, "title", "")), str(getattr(hit, "text", hit))


def format_information(hits: Sequence[Any]) -> str:
    """Search-R1's layout: `Doc {i}(Title: {title}) {text}` per hit."""
    lines = []
    for i, hit in enumerate(hits, 1):
        title, text = hit_fields(hit)
        lines.append(f"Doc {i}(Title: {title}) {text}")
    return "\n".join(lines)


def _record(hit: Any) -> dict[str, Any]:
    """A hit as stored in the trajectory: title, text, and a simulated hit's noisy flag and p."""
    out: dict[str, Any] = dict(zip(("title", "text"), hit_fields(hit), strict=True))
    if getattr(hit, "noisy", None) is not None:
        out["noisy"] = bool(hit.noisy)
        doc = getattr(hit, "document", None) or {}
        if "p" in doc:
            out["p"] = float(doc["p"])
    return out


class SearchR1Episodes:
    """An episode runner for the `search_r1` kind. Call it with `(tasks, policy)`."""

    def __init__(
        self,
        retriever: Retriever | Callable[[str, int], Sequence[Any]],
        *,
        max_turns: int = 4,
        max_turn_tokens: int = 64,
        top_k: int = 3,
        temperature: float = 1.0,
        max_total_tokens: int | None = None,
        prompt: Callable[[Task], str] | None = None,
    ) -> None:
        self.retriever = retriever
        self.max_turns = max_turns
        self.max_turn_tokens = max_turn_tokens
        self.top_k = top_k
        self.temperature = temperature
        self.max_total_tokens = max_total_tokens
        if prompt is None:
            template = prompt_template("workbench.train", "search_r1.j2")
            prompt = lambda task: template.render(question=task.question)  # noqa: E731
        self.prompt = prompt

    @property
    def curricula(self) -> list[Any]:
        """Objects whose schedule follows the training step (a simulated search's noise curriculum)."""
        return [self.retriever] if callable(getattr(self.retriever, "set_training_step", None)) else []

    def search(self, query: str, task: Task | None = None) -> list[Any]:
        source: Any = self.retriever  # for_task, search or a plain function, duck-typed
        if task is not None and callable(getattr(source, "for_task", None)):
            source = source.for_task(task.question, task.golden_answers, task_id=task.id)
        if hasattr(source, "search"):
            return list(source.search(query, self.top_k))
        return list(source(query, self.top_k))

    async def __call__(self, tasks: Sequence[Task], policy: Policy) -> list[Trajectory]:
        trajs = [Trajectory(task=t, lineage={"policy": policy.describe()}) for t in tasks]
        contexts = [policy.codec.chat([{"role": "user", "content": self.prompt(t)}]) for t in tasks]
        budget = [0] * len(tasks)  # completion + observation tokens so far
        live = list(range(len(tasks)))
        params = SamplingParams(max_new_tokens=self.max_turn_tokens, temperature=self.temperature, stop=STOPS)
        for turn in range(self.max_turns):
            if not live:
                break
            t0 = time.perf_counter()
            outs = await policy.generate([contexts[i] for i in live], params)
            gen_s = (time.perf_counter() - t0) / max(len(live), 1)
            still = []
            for i, out in zip(live, outs, strict=True):
                step = Step(
                    index=turn,
                    raw=out.text,
                    completion_ids=list(out.token_ids),
                    logprobs=list(out.logprobs) if out.logprobs is not None else None,
                    raw_logprobs=list(out.raw_logprobs) if out.raw_logprobs is not None else None,
                    finish_reason=out.finish_reason,
                    policy_version=out.policy_version,
                    generate_s=gen_s,
                    context_tokens=len(contexts[i]),
                    prompt_ids=list(contexts[i]) if turn == 0 else None,
                )
                trajs[i].steps.append(step)
                contexts[i] = contexts[i] + step.completion_ids
                budget[i] += len(step.completion_ids)
                if self._advance(trajs[i], step, policy, contexts, i, budget):
                    still.append(i)
            live = still
        for i in live:
            trajs[i].termination = "max_steps"
        for t in trajs:
            t.ended_at = time.time()
            t.metadata["turns"] = len(t.steps)
        return trajs

    def _advance(
        self, traj: Trajectory, step: Step, policy: Policy, contexts: list[list[int]], i: int, budget: list[int]
    ) -> bool:
        """Act on one turn's text; True if the episode goes on."""
        answers = ANSWER_RE.findall(step.raw)
        searches = SEARCH_RE.findall(step.raw)
        if answers:
            traj.final_answer = answers[-1].strip()
            traj.termination = "submitted"
            return False
        if not searches:
            if step.finish_reason == "length" and not self._over_budget(budget[i]):
                return True  # unfinished thought: keep generating from here
            traj.termination = "token_budget" if step.finish_reason == "length" else "no_code"
            return False
        query = searches[-1].strip()
        t0 = time.perf_counter()
        call = HostCall(name="search", arguments={"query": query, "top_k": self.top_k}, started_at=time.time())
        try:
            hits = self.search(query, traj.task)
            info = format_information(hits)
            call.result = [_record(h) for h in hits]
        except Exception as exc:
            info, call.error = f"search failed: {exc}", repr(exc)
        call.duration_s = time.perf_counter() - t0
        step.host_calls.append(call)
        step.observation_text = f"\n\n<information>{info}</information>\n\n"
        step.observation_ids = policy.codec.encode(step.observation_text)
        step.execute_s = call.duration_s
        contexts[i] = contexts[i] + step.observation_ids
        budget[i] += len(step.observation_ids)
        if self._over_budget(budget[i]):
            traj.termination = "token_budget"
            return False
        return True

    def _over_budget(self, used: int) -> bool:
        return self.max_total_tokens is not None and used >= self.max_total_tokens


__all__ = ["SearchR1Episodes", "format_information", "hit_fields"]

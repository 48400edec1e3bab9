"""The proposer as an NB-Agent episode: its task (a prompt file over a source document and a hop
count), its tools (`search` + `submit_question`) and how its question is read back.

    tools = proposer_tools(retriever)                    # search(query, top_k) + submit_question(question, answer)
    docs = sample_documents(corpus_rows, 8, rng)         # [{"id", "title", "text"}, ...]
    task = proposer_task(docs[0], hops=2, iteration=0, mode="drzero")
    traj = await NBAgent(policy, tools=tools, role="proposer").run_one(task)
    proposal_of(traj)                                    # Proposal(question=..., answer=...) or None

The proposer submits with the host tool `submit_question(question: str, answer: str)`, marked final, so
calling it ends the episode. Its arguments are read back from the trajectory's recorded tool calls (the
last successful call), which keeps the question, the answer and every search result in one place for
the Dr. Zero format score (`workbench.evolve.scoring.format_components`).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from workbench.errors import ConfigError
from workbench.passages import split_contents
from workbench.templates import prompt_template
from workbench.trajectory import Task, Trajectory

if TYPE_CHECKING:
    from workbench.search.hits import Retriever
    from workbench.tools import ToolRegistry

SUBMIT = "submit_question"
MODES = ("drzero", "agent0")


@dataclass(frozen=True)
class Proposal:
    """What a proposer episode produced."""

    question: str
    answer: str


def _submit_question(question: str, answer: str) -> str:
    """Submit your question and its answer; this ends the episode. Call it once."""
    return f"Question submitted: {question} -> {answer}"


def proposer_tools(retriever: Retriever, *, top_k_max: int = 10) -> ToolRegistry:
    """A registry with `search` over `retriever` and the final tool `submit_question`."""
    from workbench.tools import ToolRegistry, make_tool, search_tool

    return ToolRegistry(
        [search_tool(retriever, max_top_k=top_k_max), make_tool(_submit_question, name=SUBMIT, final=True)]
    )


def solver_tools(retriever: Retriever) -> ToolRegistry:
    """A registry with `search` over `retriever` (plus `submit_final_answer`)."""
    from workbench.tools import ToolRegistry, search_tool

    return ToolRegistry([search_tool(retriever)])


def render_prompt(mode: str, **values: object) -> str:
    """Render `prompts/<mode>_proposer.j2`."""
    if mode not in MODES:
        raise ConfigError(f"proposer mode {mode!r}: use one of {', '.join(MODES)}")
    return prompt_template("workbench.evolve", f"{mode}_proposer.j2").render(**values).strip()


def split_document(row: dict[str, Any]) -> dict[str, str]:
    """A corpus row (`{"id", "contents"}` or `{"id", "title", "text"}`) as `{"id", "title", "text"}`."""
    if "text" in row:
        return {"id": str(row.get("id", "")), "title": str(row.get("title", "")), "text": str(row["text"])}
    if "contents" not in row:
        raise ConfigError(
            f"corpus row {row.get('id', '?')!r} has neither 'contents' nor 'text'; "
            "use Search-R1 rows {id, contents} or {id, title, text}"
        )
    title, text = split_contents(str(row["contents"]))
    return {"id": str(row.get("id", "")), "title": title, "text": text.strip()}


def sample_documents(
    rows: Sequence[dict[str, Any]], n: int, rng: random.Random, *, max_chars: int = 1200
) -> list[dict[str, str]]:
    """`n` distinct source documents (fewer if the corpus is smaller), text cut to `max_chars`."""
    if not rows:
        raise ConfigError("the corpus is empty; pass corpus rows or a retriever with a corpus")
    picks = rng.sample(range(len(rows)), min(n, len(rows)))
    docs = [split_document(rows[i]) for i in picks]
    for d in docs:
        d["text"] = d["text"][:max_chars]
    return docs


def sample_hops(weights: dict[int, float], n: int, rng: random.Random) -> list[int]:
    """`n` hop counts drawn with `weights` (Dr. Zero: {1: 4, 2: 3, 3: 2, 4: 1})."""
    hops, w = list(weights), list(weights.values())
    return rng.choices(hops, w, k=n)


def proposer_task(
    doc: dict[str, str], hops: int, *, iteration: int, mode: str = "drzero", prompt_index: int = 0
) -> Task:
    """The proposer's task: the rendered prompt; metadata carries the document, hops and iteration."""
    if hops < 1:
        raise ConfigError(f"hops={hops}: a question needs at least one hop")
    text = render_prompt(mode, hops=hops, title=doc["title"], text=doc["text"])
    return Task(
        id=f"it{iteration}-p{prompt_index}-d{doc['id']}-h{hops}",
        question=text,
        golden_answers=[],
        metadata={
            "hops": hops,
            "iteration": iteration,
            "doc_id": doc["id"],
            "doc_title": doc["title"],
            "document": f"(Title: {doc['title']}) {doc['text']}",
            "mode": mode,
            "prompt_index": prompt_index,
            "source": f"search_zero_{hops}",
        },
    )


def proposal_of(traj: Trajectory) -> Proposal | None:
    """The question and answer of the last successful `submit_question` call, if any."""
    for step in reversed(traj.steps):
        for call in reversed(step.host_calls):
            if call.name == SUBMIT and call.error is None:
                q, a = call.arguments.get("question"), call.arguments.get("answer")
                return Proposal(str(q or "").strip(), str(a or "").strip())
    return None


def search_results(traj: Trajectory, tool: str = "search") -> list[str]:
    """The text of every successful `search` call, in order."""
    return [str(c.result) for s in traj.steps for c in s.host_calls if c.name == tool and c.error is None]


__all__ = [
    "MODES",
    "SUBMIT",
    "Proposal",
    "proposal_of",
    "proposer_task",
    "proposer_tools",
    "render_prompt",
    "sample_documents",
    "sample_hops",
    "search_results",
    "solver_tools",
    "split_document",
]

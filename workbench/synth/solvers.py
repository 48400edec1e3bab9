"""Solvers synthesis is measured against: one that answers from memory, one that browses.

    direct = ClosedBookPolicy(graph, known=0.5)     # a Policy: it "knows" half of the pages by heart
    DirectSolver(direct, n=8)                       # what the too-easy check asks
    browse_answer(graph, question)                  # reads the pages the question leads to

`ClosedBookPolicy` stands in for an LLM's parametric memory in tests and benches: a fraction
`known` of the entity pages (chosen by a hash of the url) is remembered; a question it can resolve
from those alone it answers right, otherwise it guesses a remembered name. It reads the question
from the prompt text, as a model would, and varies its guesses with the sampling seed.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from workbench.errors import ToolError
from workbench.policies.base import ByteCodec, Completion, SamplingParams
from workbench.synth.pages import PageGraph, PageInfo
from workbench.synth.qa import parse_question
from workbench.synth.verify import seeded

if TYPE_CHECKING:
    from workbench.web.page import Page


class _Memory(PageGraph):
    """A PageGraph that knows some pages and cannot fetch any other."""

    def __init__(self, infos: list[PageInfo]) -> None:
        super().__init__(None)
        for info in infos:
            self._add(info.url, info)

    def page(self, url: str) -> Page:
        raise ToolError(f"{url} is not remembered")


class ClosedBookPolicy:
    """A no-tool answerer with a partial memory of the pages (see the module docstring)."""

    context_size: int | None = None

    def __init__(self, graph: PageGraph, *, known: float = 0.5, seed: int = 0, name: str = "closed-book") -> None:
        self.codec = ByteCodec()
        self.name = f"{name}(known={known:g})"
        self.known, self.seed = known, seed
        self.memory = _Memory([graph.info(u) for u in graph.urls if seeded(u, seed).random() < known])
        self._names = sorted(i.title for i in self.memory._info.values())

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "kind": "closed_book", "known": self.known, "pages": len(self._names)}

    def answer(self, question: str, draw: int = 0) -> str:
        rng = seeded(f"{question}|{draw}", self.seed)
        tree = parse_question(question)
        fits = sorted(self.memory.resolve(tree)) if tree is not None else []
        if fits:
            return self.memory.label(rng.choice(fits))
        return rng.choice(self._names) if self._names else "unknown"

    async def generate(self, prompts: Sequence[list[int]], params: SamplingParams) -> list[Completion]:
        out = []
        for i, ids in enumerate(prompts):
            text = self.codec.decode(ids)
            found = re.findall(r"Question: (.+)", text)
            answer = self.answer(found[-1].strip() if found else "", (params.seed or 0) + i)
            reply = f"<think>From memory.</think>\n<answer>{answer}</answer>"
            out.append(Completion(reply, self.codec.encode(reply), None, "stop"))
        return out


def browse_answer(graph: PageGraph, question: str) -> str | None:
    """Answer by reading pages: resolve the question's description over the site; None if not one."""
    tree = parse_question(question)
    if tree is None:
        return None
    fits = graph.resolve(tree)
    return graph.label(next(iter(fits))) if len(fits) == 1 else None


__all__ = ["ClosedBookPolicy", "browse_answer"]

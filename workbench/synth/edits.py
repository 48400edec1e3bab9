"""The three ways a QA changes: a seed from a page, an injection, a fuzz. The answer never changes.

    qa = seed_qa(graph, url, key="director")                 # What is the director of Vel Orun?
    qa = inject(graph, qa, "Vel Orun", via=url_b, key="...")  # one more hop: Vel Orun → a description
    qa = fuzz(graph, qa, "release year")                     # 1950 → the early 1950s → the 1950s → …
    edit_options(graph, qa)                                  # every injection / fuzz that applies now

Bad arguments raise `ToolError` naming what to pass instead (the REPL tools show it to the model).
"""

from __future__ import annotations

import random
from dataclasses import replace as dc_replace
from typing import Any

from workbench.errors import ToolError
from workbench.synth.pages import PageGraph, PageInfo, norm
from workbench.synth.qa import Clue, Desc, Ref, Span, Statement, SynthQA, Value, refs, render_value, replace

WIDEN = {4: 9, 9: 19}  # a span of 5 years widens to its decade, a decade to 20 years


def _statement(info: PageInfo, key: str, value: str) -> Statement:
    text = info.sentence_for(info.title, value) or info.sentence_for(value) or f"{key.capitalize()}: {value}."
    return Statement(text, info.url, info.title, key, value)


def seed_qa(graph: PageGraph, url: str, *, key: str | None = None, rng: random.Random | None = None) -> SynthQA:
    """`What is the <key> of <page title>?`, answered by the page's `key` fact (random key if None)."""
    info = graph.info(url)
    facts = [f for f in info.facts if key is None or f.key == key]
    if not facts:
        raise ToolError(f"{url} has no fact {key!r}; its keys are {sorted({f.key for f in info.facts})}")
    fact = (rng or random.Random(0)).choice(facts)
    kind = graph.info(fact.value_url).kind if fact.value_url else ""
    tree = Desc(of_key=fact.key, of_subject=Ref(info.title, info.url))
    return SynthQA(fact.value, fact.value_url, kind, tree, [_statement(info, fact.key, fact.value)])


def _ref(qa: SynthQA, target: str) -> Ref:
    for r in refs(qa.tree):
        if norm(r.name) == norm(target) or r.url == target:
            return r
    names = [r.name for r in refs(qa.tree)]
    raise ToolError(f"{target!r} is not named in the question; inject into one of {names}")


def inject(graph: PageGraph, qa: SynthQA, target: str, via: str, key: str, extra: str = "") -> SynthQA:
    """Replace the entity `target` by a description through the linked page `via`.

    If `via`'s fact `key` links to the target, it becomes `the <key> of <via>` (the fact is on
    `via`); if the target's fact `key` links to `via`, it becomes `the <kind> whose <key> is <via>`
    (plus `whose <extra> is ...` from the target's page when `extra` names another of its facts)."""
    ref = _ref(qa, target)
    here, there = graph.info(ref.url), graph.info(via)
    inbound = [f for f in there.values(key) if f.value_url == ref.url]
    outbound = [f for f in here.values(key) if f.value_url == there.url]
    if inbound:
        node: Value = Desc(of_key=key, of_subject=Ref(there.title, there.url))
        new = [_statement(there, key, ref.name)]
    elif outbound:
        clues = [Clue(key, Ref(there.title, there.url))]
        new = [_statement(here, key, there.title)]
        if extra:
            facts = here.values(extra)
            if not facts:
                raise ToolError(
                    f"{ref.name}'s page has no fact {extra!r}; its keys are {sorted({f.key for f in here.facts})}"
                )
            f = facts[0]
            clues.append(Clue(extra, Ref(f.value, f.value_url) if f.value_url else f.value))
            new.append(_statement(here, extra, f.value))
        node = Desc(kind=here.kind, clues=tuple(clues))
    else:
        raise ToolError(
            f"no fact {key!r} links {there.title!r} and {ref.name!r}; call links({ref.url!r}) "
            "for the pages and keys that do"
        )
    return SynthQA(qa.answer, qa.answer_url, qa.answer_kind, replace(qa.tree, ref, node), qa.statements + new)


def _numbers(value: Value) -> list[tuple[Clue, Span | str]]:
    """The clues giving a number (a year or a span of years), each with that number."""
    if not isinstance(value, Desc):
        return []
    if value.of_key:
        return _numbers(value.subject)
    out = [
        (c, c.value)
        for c in value.clues
        if isinstance(c.value, Span) or (isinstance(c.value, str) and c.value.isdigit())
    ]
    return out + [n for cl in value.clues for n in _numbers(cl.value)]


def blur(value: Span | str) -> Span | None:
    """One step blurrier: 1952 → 1950–1954 → the 1950s → 1940–1959; None past that."""
    if isinstance(value, str):
        year = int(value)
        low = year - year % 5
        return Span(low, low + 4)
    width = WIDEN.get(value.high - value.low)
    if width is None:
        return None
    low = value.low - value.low % (width + 1)
    return Span(low, low + width)


def fuzz(graph: PageGraph, qa: SynthQA, key: str) -> SynthQA:
    """Blur the number the question gives for `key` one step (the statements stay the same)."""
    numbers = [(c, n) for c, n in _numbers(qa.tree) if c.key == key]
    if not numbers:
        raise ToolError(
            f"the question gives no number for {key!r}; fuzzable keys: "
            f"{sorted({c.key for c, _ in _numbers(qa.tree)}) or 'none (inject one with extra=)'}"
        )
    clue, number = numbers[0]
    new = blur(number)
    if new is None:
        raise ToolError(f"{key!r} is already as blurred as it gets ({render_value(number)})")
    return dc_replace(qa, tree=replace(qa.tree, clue, Clue(key, new)), question="")


def edit_options(graph: PageGraph, qa: SynthQA) -> list[dict[str, Any]]:
    """Every edit that applies: injections through each linked page, fuzzes of each number."""
    used = set(qa.urls) | {qa.answer_url}
    out: list[dict[str, Any]] = []
    for ref in refs(qa.tree):
        if not ref.url:
            continue
        for f in graph.in_links(ref.url):
            if f.subject_url not in used:
                out.append({"action": "inject", "target": ref.name, "via": f.subject_url, "key": f.key})
        here = graph.info(ref.url)
        extras = [
            f.key for f in here.facts if not f.value_url and f.value.isdigit() and norm(f.value) != norm(qa.answer)
        ]
        for f in here.facts:
            if f.value_url and f.value_url not in used:
                out.append(
                    {
                        "action": "inject",
                        "target": ref.name,
                        "via": f.value_url,
                        "key": f.key,
                        "extra": extras[0] if extras else "",
                    }
                )
    for clue, number in _numbers(qa.tree):
        if blur(number) is not None:
            out.append({"action": "fuzz", "key": clue.key})
    return out


def apply_edit(graph: PageGraph, qa: SynthQA, action: dict[str, Any]) -> SynthQA:
    """Apply one edit given as a dict (`edit_options` items); ToolError on a bad one."""
    kind = action.get("action")
    try:
        if kind == "inject":
            return inject(
                graph, qa, str(action["target"]), str(action["via"]), str(action["key"]), str(action.get("extra") or "")
            )
        if kind == "fuzz":
            return fuzz(graph, qa, str(action["key"]))
    except KeyError as exc:
        raise ToolError(f"{kind} edit is missing {exc.args[0]!r}") from None
    raise ToolError(f"unknown edit {kind!r}; use 'inject' or 'fuzz' (or 'exit')")


__all__ = ["apply_edit", "blur", "edit_options", "fuzz", "inject", "seed_qa"]

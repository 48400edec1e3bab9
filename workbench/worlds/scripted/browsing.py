"""A scripted NB-Agent that answers synthetic-world questions by browsing: the test and demo policy.

Each turn it reads only what a model would see (the task, the newest `<output>`, the notepad):
search for the question's start entity, follow the hit's URL, `find_in_page` the infobox row of
the hop's relation, note the fact and the next page's URL, follow that link, ... then submit.

    policy = browsing_solver()
    agent = NBAgent(policy, tools=ToolRegistry(web_tools(fetcher, retriever=bm25)), config=...)
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from workbench.policies.scripted import ScriptedPolicy
from workbench.worlds.scripted.solver import parse_chain_question

if TYPE_CHECKING:
    from workbench.policies.base import Codec

_FACT = re.compile(r"the (.+?) of (.+?) is (.+?)\s*$", re.MULTILINE)
_PAGE = re.compile(r"the page of (.+?) is (\S+)\s*$", re.MULTILINE)
_LINK = re.compile(r"\[([^\]\n]+)\]\((https?://[^)\s]+)\)")
_HIT = re.compile(r"\(Title: ([^)\n]+)\) \(URL: (\S+)\)")
_FOUND = re.compile(r"match(?:es)? for '(.+?)' in (\S+?)(?: \(first \d+\))?:\n")


def _urls(context: str) -> dict[str, str]:
    """Entity name -> page URL, from links, search hits and noted pages (newest wins)."""
    urls: dict[str, str] = {}
    for pattern in (_LINK, _HIT, _PAGE):
        for name, url in pattern.findall(context):
            urls[name.strip()] = url
    return urls


def _row(output: str, label: str) -> tuple[str, str | None] | None:
    """(value, url) of the infobox row `| label | value |` in `output`."""
    m = re.search(rf"^\| {re.escape(label)} \| (.+?) \|[ \t]*$", output, re.MULTILINE)
    if not m:
        return None
    cell = m.group(1).strip()
    link = _LINK.fullmatch(cell)
    return (link.group(1), link.group(2)) if link else (cell, None)


def next_turn(context: str) -> str:
    """The browsing solver's next turn for the episode whose visible text is `context`."""
    parsed = parse_chain_question(context)
    if parsed is None:
        return "<think>I cannot parse this task.</think>\n<code>\nsubmit_final_answer('unknown')\n</code>"
    start, phrases = parsed
    context = re.sub(r"<code>.*?</code>", "", context, flags=re.DOTALL)  # what was seen, not written
    facts = {(p, e): v for p, e, v in _FACT.findall(context) if p != "page"}
    entity, hop = start, 0
    while hop < len(phrases) and (phrases[hop], entity) in facts:
        entity, hop = facts[(phrases[hop], entity)], hop + 1
    outputs = re.findall(r"<output>\n(.*?)\n</output>", context, re.DOTALL)
    last = outputs[-1] if outputs else ""
    think, lines = [], []
    noted: dict[str, str] = {}
    if not outputs:
        think.append(f"The task needs {len(phrases)} hop(s) from {start}; I start at its page.")
        lines.append(f"notepad.add_todo({[f'find the {p}' for p in phrases]!r})")
    elif hop < len(phrases):
        label = phrases[hop].capitalize()
        found = _FOUND.search(last)
        urls = _urls(context)
        row = _row(last, label) if found and found.group(2) == urls.get(entity) else None
        if row is not None:
            value, url = row
            think.append(f"The infobox says the {phrases[hop]} of {entity} is {value}.")
            lines.append(f"notepad.add_fact({f'the {phrases[hop]} of {entity} is {value}'!r})")
            if url:
                lines.append(f"notepad.add_fact({f'the page of {value} is {url}'!r})")
                noted[value] = url
            lines.append(f"notepad.update_todo({hop + 1}, 'done')")
            entity, hop = value, hop + 1
    if hop == len(phrases):
        think.append(f"So the answer is {entity}.")
        lines.append(f"submit_final_answer({entity!r})")
    else:
        url = noted.get(entity) or _urls(context).get(entity)
        label = phrases[hop].capitalize()
        if url is None:
            think.append(f"I need the page of {entity}: I search for it.")
            lines.append(f"print(search({entity!r}, top_k=3))")
        else:
            think.append(f"I look up the {phrases[hop]} on the page of {entity}.")
            if entity not in noted and not re.search(rf"the page of {re.escape(entity)} is ", context):
                lines.append(f"notepad.add_fact({f'the page of {entity} is {url}'!r})")  # survives trims
            lines.append(f"print(find_in_page({url!r}, {label!r}))")
    return "<think>" + " ".join(think) + "</think>\n<code>\n" + "\n".join(lines) + "\n</code>"


def browsing_solver(*, codec: Codec | None = None, name: str = "browsing-solver") -> ScriptedPolicy:
    """A ScriptedPolicy that answers world questions with search, find_in_page and the notepad."""
    return ScriptedPolicy(lambda context, _turn: next_turn(context), codec=codec, name=name)


__all__ = ["browsing_solver", "next_turn"]

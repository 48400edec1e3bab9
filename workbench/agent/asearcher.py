"""The ASearcher agent preset: its prompt, its tools (search, access, answer) and a long horizon.

    config = asearcher_config()                    # 32 turns, page windows, short_text=100, notes kept
    tools = asearcher_tools(fetcher, retriever=bm25)   # search (hits with URLs), access, find_in_page, answer
    NBAgent(policy, tools=tools, config=config).run(tasks)

What the model reads it keeps in the notepad (`notepad.add_fact`), which survives trimming; each
page it read shrinks to a 100-character stub after the next turn (ASearcher's `short_text`), so
dozens of pages fit one episode. ASearcher used 25k-character windows for 32B models; the default
here is 6,000 (under the gateway's 20k result cap, and kind to small models).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from workbench.agent.config import AgentConfig
from workbench.tools.registry import Tool, ToolRegistry, make_tool
from workbench.tools.web import web_tools
from workbench.web.fetch import Fetcher

if TYPE_CHECKING:
    from workbench.search.hits import Retriever
    from workbench.trajectory import Task

ASEARCHER_AGENT: dict[str, Any] = {
    "prompt": "asearcher",
    "max_steps": 32,  # ASearcher's max_turns (128 for its QwQ runs)
    "short_text": 100,  # characters a read page keeps after the next turn
    "page_tools": ("access",),
    "max_context_tokens": 32768,
    "max_new_tokens": 1024,
    "output_cap": 8000,  # one page window (6,000) plus its links
    "search_top_k": 5,  # ASearcher's topk
    "tool_call_budget": 128,
    "wall_clock_s": 1800.0,
    "trim": "soft",  # drop the oldest turns first; the notepad always stays
}


def asearcher_config(**overrides: Any) -> AgentConfig:
    """`AgentConfig` with the ASearcher preset, then `overrides` (e.g. max_steps=128)."""
    return AgentConfig.from_dict({**ASEARCHER_AGENT, **overrides})


def _answer(answer: str) -> str:
    """Submit the final answer (a name, a number, a date); this ends the episode. Call it once."""
    return f"Final answer submitted: {answer}"


answer_tool: Tool = make_tool(_answer, name="answer", final=True)


def asearcher_tools(
    fetcher: Fetcher,
    *,
    retriever: Retriever | None = None,
    task: Task | None = None,
    window_chars: int = 6000,
    search_top_k: int = 5,
    **browser_options: Any,
) -> ToolRegistry:
    """search (when a retriever is given; hits show URLs), access, find_in_page and answer."""
    tools = web_tools(
        fetcher, retriever=retriever, task=task, search_top_k=search_top_k, window_chars=window_chars, **browser_options
    )
    return ToolRegistry([*tools, answer_tool])


__all__ = ["ASEARCHER_AGENT", "answer_tool", "asearcher_config", "asearcher_tools"]

"""The scripted browsing solver answers world questions by browsing alone, in sandboxed kernels."""

from __future__ import annotations

import pytest

from workbench.agent import AgentConfig, NBAgent
from workbench.search import BM25Retriever, Corpus
from workbench.tools import ToolRegistry
from workbench.tools.web import web_tools
from workbench.worlds.scripted.browsing import browsing_solver


@pytest.mark.slow
def test_browsing_solver_answers_world_questions_over_http(world, served):
    site, base = served
    bm25 = BM25Retriever.build(Corpus.from_rows(world.corpus()), show_progress=False)
    tasks = [t for hops in (1, 2, 3, 4) for t in [t for t in world.tasks("test") if t.metadata["hops"] == hops][:2]]
    assert len({t.metadata["hops"] for t in tasks}) >= 3
    with site.http_fetcher(base) as fetcher:
        registry = ToolRegistry(web_tools(fetcher, retriever=bm25))
        agent = NBAgent(
            browsing_solver(),
            tools=registry,
            concurrency=4,
            config=AgentConfig(max_steps=8, output_cap=6000, max_context_tokens=16384),
        )
        trajectories = agent.run(tasks, progress=False)
    for task, traj in zip(tasks, trajectories, strict=True):
        assert traj.termination == "submitted", (traj.termination, traj.error)
        assert traj.final_answer in task.golden_answers
        calls = [c for s in traj.steps for c in s.host_calls]
        names = [c.name for c in calls]
        assert names[0] == "search" and names.count("find_in_page") == task.metadata["hops"]
        assert all(c.error is None and c.duration_s > 0 for c in calls)
        facts = traj.steps[-1].notepad["facts"]  # what it read, kept where trimming cannot reach
        hops = [f for f in facts if not f.startswith("the page of ")]
        assert len(hops) == task.metadata["hops"] and hops[-1].endswith(f" is {traj.final_answer}")
        assert any(f.startswith("the page of ") for f in facts)

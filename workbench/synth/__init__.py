"""QA synthesis (ASearcher): grow a seed question from a page into a hard multi-hop one, verifying
every edit, as a loop or as REPL tools an NB-Agent drives.

    from workbench.synth import PageGraph, ScriptedSynthesizer, ClosedBookPolicy, run_synthesis
    from workbench.web import LocalSiteFetcher
    from workbench.worlds.site import world_site

    site = world_site(world)
    graph = PageGraph(LocalSiteFetcher(site)); graph.crawl(list(site.pages))
    result = run_synthesis(graph, ScriptedSynthesizer(), ClosedBookPolicy(graph), store=store)
    result.qa_path, result.stats()        # qa.jsonl (Search-R1 rows) and acceptance / difficulty

Pages are read only through `workbench.web.open_page`, so an `HttpFetcher` (or a recorded
`CachingFetcher`) runs the same synthesis on the live web.
"""

import workbench.synth.reward  # noqa: F401  (registers synth.recorded)
from workbench.synth.edits import apply_edit, blur, edit_options, fuzz, inject, seed_qa
from workbench.synth.loop import (
    PolicySynthesizer,
    ScriptedSynthesizer,
    Synthesis,
    SynthesisConfig,
    SynthesisResult,
    parse_action,
    run_synthesis,
    synthesize_one,
)
from workbench.synth.pages import Fact, PageGraph, PageInfo, parse_page
from workbench.synth.qa import Clue, Desc, Ref, Span, Statement, SynthQA, parse_question, render, render_question
from workbench.synth.solvers import ClosedBookPolicy, browse_answer
from workbench.synth.tools import SynthesisSession, arun_repl_synthesis, repl_teacher, run_repl_synthesis
from workbench.synth.verify import REASONS, Attempt, DirectSolver, Verdict, Verifier

__all__ = [
    "REASONS",
    "Attempt",
    "ClosedBookPolicy",
    "Clue",
    "Desc",
    "DirectSolver",
    "Fact",
    "PageGraph",
    "PageInfo",
    "PolicySynthesizer",
    "Ref",
    "ScriptedSynthesizer",
    "Span",
    "Statement",
    "SynthQA",
    "Synthesis",
    "SynthesisConfig",
    "SynthesisResult",
    "SynthesisSession",
    "Verdict",
    "Verifier",
    "apply_edit",
    "arun_repl_synthesis",
    "blur",
    "browse_answer",
    "edit_options",
    "fuzz",
    "inject",
    "parse_action",
    "parse_page",
    "parse_question",
    "render",
    "render_question",
    "repl_teacher",
    "run_repl_synthesis",
    "run_synthesis",
    "seed_qa",
    "synthesize_one",
]

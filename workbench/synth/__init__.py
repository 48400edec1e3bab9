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

from workbench.synth.config import SynthesisConfig
from workbench.synth.edits import blur, fuzz, inject, seed_qa
from workbench.synth.loop import run_synthesis
from workbench.synth.pages import PageGraph
from workbench.synth.qa import Clue, Desc, Span, Statement, parse_question, render_question
from workbench.synth.solvers import ClosedBookPolicy, browse_answer
from workbench.synth.synthesizers import PolicySynthesizer, ScriptedSynthesizer, parse_action
from workbench.synth.tools import repl_teacher, run_repl_synthesis
from workbench.synth.verify import DirectSolver, Verifier

__all__ = [
    "ClosedBookPolicy",
    "Clue",
    "Desc",
    "DirectSolver",
    "PageGraph",
    "PolicySynthesizer",
    "ScriptedSynthesizer",
    "Span",
    "Statement",
    "SynthesisConfig",
    "Verifier",
    "blur",
    "browse_answer",
    "fuzz",
    "inject",
    "parse_action",
    "parse_question",
    "render_question",
    "repl_teacher",
    "run_repl_synthesis",
    "run_synthesis",
    "seed_qa",
]

"""QA synthesis: planted-defect rejection, uniqueness, difficulty and depth of accepted QAs.

    .venv/bin/python bench/bench_synth.py               # ~1 minute
    .venv/bin/python bench/bench_synth.py --seeds 20    # quicker

On the small world's site (LocalSiteFetcher + the real extractor), a closed-book solver that
remembers half of the pages stands in for a model's memory. Figures, each against a baseline in
the same run:
  * planted-defect rejection per type (leak, unsupported fact, ambiguous answer, too easy), each
    rejected *for that reason* / planted (target >= 0.95); clean edits kept / clean (printed);
  * accepted QAs unique: re-resolved on a freshly crawled copy of the site, fits exactly the answer
    (target 1.0);
  * no-tool accuracy on accepted QAs / on their seed QAs, asked anew (target <= 0.5);
  * tool-using (browsing) pass rate / no-tool pass rate on accepted QAs (target >= 2.0);
  * supporting statements per accepted QA / per seed QA (target >= 2.0).
"""

from __future__ import annotations

import argparse
import dataclasses
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _util import add_smoke_flag, figure, record

from workbench.synth import (
    ClosedBookPolicy,
    DirectSolver,
    PageGraph,
    ScriptedSynthesizer,
    Statement,
    SynthesisConfig,
    Verifier,
    browse_answer,
    inject,
    run_synthesis,
    seed_qa,
)
from workbench.web import LocalSiteFetcher
from workbench.worlds import make_world
from workbench.worlds.site import world_site


def clean_injections(graph, limit):
    """(seed, injected) pairs through in-links: `the <key> of <page>`, unique by construction."""
    out = []
    for url in graph.urls:
        info = graph.info(url)
        for f in info.facts:
            if not f.value_url or f.value_url == url:
                continue
            qa = seed_qa(graph, url, key=f.key)
            for link in graph.in_links(url):
                if link.subject_url != qa.answer_url:
                    out.append((qa, inject(graph, qa, info.title, link.subject_url, link.key)))
                    break
            break
        if len(out) >= limit:
            break
    return out


def ambiguous_injections(graph, limit):
    """`the <kind> whose <key> is X` where several pages name X under that key."""
    out = []
    for url in graph.urls:
        info = graph.info(url)
        for f in info.facts:
            peers = [g for g in graph.in_links(f.value_url) if g.key == f.key] if f.value_url else []
            others = [g for g in info.facts if g.key != f.key]
            if len(peers) >= 2 and others:
                qa = seed_qa(graph, url, key=others[0].key)
                if qa.answer_url != f.value_url:
                    out.append(inject(graph, qa, info.title, f.value_url, f.key))
                break
        if len(out) >= limit:
            break
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", type=int, default=60, help="syntheses to run")
    ap.add_argument("--planted", type=int, default=60, help="planted defects per type")
    add_smoke_flag(ap)
    args = ap.parse_args()
    if args.smoke:
        args.seeds, args.planted = 3, 3
    t0 = time.monotonic()
    site = world_site(make_world(0, "small"))
    graph = PageGraph(LocalSiteFetcher(site))
    graph.crawl(list(site.pages))
    memory = ClosedBookPolicy(graph, known=0.5)
    blank = ClosedBookPolicy(graph, known=0.0)
    print(f"site: {len(graph.urls)} entity pages crawled in {time.monotonic() - t0:.1f} s")
    record(f"site crawl ({len(graph.urls)} entity pages)", time.monotonic() - t0, "s")

    # -- planted defects ------------------------------------------------------------------------
    verifier = Verifier(graph, DirectSolver(blank, n=8))
    knows_all = Verifier(graph, DirectSolver(ClosedBookPolicy(graph, known=1.0), n=8))
    pairs = clean_injections(graph, args.planted)
    rng = random.Random(0)
    planted = {"leak": [], "unsupported": [], "ambiguous": [], "too_easy": []}
    clean_ok = 0
    for _seed, qa in pairs:
        new = qa.statements[-1]
        clean_ok += verifier.check(qa, [new]).ok
        leak = dataclasses.replace(qa, question=qa.question.rstrip("?") + f" (not {qa.answer})?")
        planted["leak"].append(verifier.check(leak, [new]).reason)
        wrong = rng.choice([u for u in graph.urls if u != new.url])
        lie = Statement(
            new.text.replace(new.value, graph.info(wrong).title)
            if new.value in new.text
            else new.text + " Also founded in 1066.",
            new.url,
            new.subject,
            new.key,
            new.value,
        )
        planted["unsupported"].append(verifier.check(qa, [lie]).reason)
        planted["too_easy"].append(knows_all.check(qa, [new]).reason)
    for qa in ambiguous_injections(graph, args.planted):
        planted["ambiguous"].append(verifier.check(qa, qa.statements[-1:]).reason)
    figure("clean edits kept / clean", clean_ok / max(len(pairs), 1), "share", target="printed")
    for kind, reasons in planted.items():
        rate = sum(r == kind for r in reasons) / max(len(reasons), 1)
        figure(
            f"planted {kind} rejected for it / planted ({len(reasons)})",
            rate,
            "share",
            target=">= 0.95",
            ok=rate >= 0.95 and len(reasons) > 0,
        )

    # -- a synthesis run --------------------------------------------------------------------------
    t1 = time.monotonic()
    cfg = SynthesisConfig(run_dir=tempfile.mkdtemp(prefix="bench_synth_"), seeds=args.seeds, seed=3)
    result = run_synthesis(graph, ScriptedSynthesizer(), memory, config=cfg)
    acc = result.accepted
    print(
        f"synthesis: {len(result.syntheses)} seeds, {len(acc)} accepted "
        f"({len(acc) / max(len(result.syntheses), 1):.0%}) in {time.monotonic() - t1:.1f} s; "
        f"edit keep rate {result.stats()['synthesis/edit_keep_rate']:.2f}"
    )
    record(f"synthesis: accepted / seeds ({len(result.syntheses)})", len(acc) / max(len(result.syntheses), 1), "share")
    record("synthesis: wall", time.monotonic() - t1, "s")
    record("synthesis: edit keep rate", result.stats()["synthesis/edit_keep_rate"], "share")
    if not acc:
        print("no accepted QA: nothing more to measure")
        return
    fresh = PageGraph(LocalSiteFetcher(site))
    fresh.crawl(list(site.pages))
    unique = sum(fresh.resolve(s.qa.tree) == {s.qa.answer_url or s.qa.answer.lower()} for s in acc) / len(acc)
    figure("accepted QAs unique (fresh crawl)", unique, "share", target="1.0", ok=unique == 1.0)

    asker = DirectSolver(memory, n=8, seed=99)  # asked anew, other draws than during synthesis

    def no_tool(question: str, answer: str) -> float:
        attempts = asker.attempts(question, [answer])
        return sum(a.correct for a in attempts) / len(attempts)

    seeds_q = [(s.history[0]["question"], s.qa.answer) for s in acc]
    acc_nt = sum(no_tool(s.qa.question, s.qa.answer) for s in acc) / len(acc)
    seed_nt = sum(no_tool(q, a) for q, a in seeds_q) / len(seeds_q)
    floor = 1 / (8 * len(acc))  # one right answer in all attempts: the resolution of the measure
    figure("no-tool accuracy: seed QAs (baseline)", seed_nt, "share")
    figure(
        "no-tool accuracy: accepted QAs",
        acc_nt,
        "share",
        baseline=max(seed_nt, floor),
        target="ratio <= 0.5",
        ok=acc_nt / max(seed_nt, floor) <= 0.5,
    )
    browse = sum(browse_answer(fresh, s.qa.question) == s.qa.answer for s in acc) / len(acc)
    figure("no-tool pass rate on accepted (baseline)", acc_nt, "share")
    figure(
        "browsing pass rate on accepted",
        browse,
        "share",
        baseline=max(acc_nt, floor),
        target="ratio >= 2.0",
        ok=browse / max(acc_nt, floor) >= 2.0,
    )
    per_acc = sum(s.qa.hops for s in acc) / len(acc)
    figure("statements per seed QA (baseline)", 1.0, "count")
    figure("statements per accepted QA", per_acc, "count", baseline=1.0, target="ratio >= 2.0", ok=per_acc >= 2.0)
    print(f"total {time.monotonic() - t0:.1f} s")
    record("total", time.monotonic() - t0, "s")


if __name__ == "__main__":
    main()

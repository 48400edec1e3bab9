"""Browse: access() through the gateway, the web cache, extraction speed, size and fact recall.

    .venv/bin/python bench/bench_web.py              # ~1 minute
    .venv/bin/python bench/bench_web.py --pages 100  # quicker

Figures, each against a baseline measured in the same run:
  * access() p50 from a sandboxed kernel through the gateway, HttpFetcher on a loopback site, one
    cell per call on a page not read before (fetch + extract each time) / the kernel round trip of an
    empty cell (target <= 2.0), per extractor;
  * CachingFetcher hit / miss latency over the same site (target <= 0.1);
  * extraction pages/s, trafilatura vs the stdlib fallback (printed; trafilatura when installed);
  * extracted Markdown tokens / raw HTML tokens on the world's boilerplate-heavy pages (target <= 0.5);
  * fact recall: infobox facts of every page found in its Markdown / facts in the world (target 1.0).
"""

from __future__ import annotations

import argparse
import asyncio
import re
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _util import add_smoke_flag, figure, p50

from workbench.kernel import AsyncKernel
from workbench.tools import ToolGateway, ToolRegistry
from workbench.tools.web import web_tools
from workbench.web import CachingFetcher, extract, has_trafilatura
from workbench.worlds import make_world
from workbench.worlds.site import world_site

_TOKEN = re.compile(r"\w+|[^\w\s]")


def tokens(text: str) -> int:
    return len(_TOKEN.findall(text))


def recall(world, site, extractor: str) -> float:
    found = total = 0
    for e in world.entities:
        url = site.url_for(e.id)
        md = extract(site.pages[url], url, extractor).markdown
        for rel in world.relations_of(e.type):
            value = world.lookup(e.id, rel.name)
            shown = f"[{value}]({site.url_for(value)})" if rel.target else value
            total += 1
            found += bool(re.search(rf"^\| {rel.phrase.capitalize()} \| {re.escape(shown)} \|", md, re.M))
    return found / total


async def gateway_figures(site, base: str, n: int, extractor: str) -> tuple[float, float]:
    """(p50 of an empty cell, p50 of a cell calling access on a fresh page), seconds."""
    fetcher = site.http_fetcher(base)
    registry = ToolRegistry(web_tools(fetcher, cache_pages=0, extractor=extractor))
    kernel = AsyncKernel(startup_code="import workbench.runtime")
    await kernel.start()
    try:
        async with ToolGateway(registry, kernel.rollout_dir / "run" / "gateway.sock") as gw:
            await kernel.execute(gw.setup_code(), silent=True)
            empty, access = [], []
            urls = [site.url_for(i % len(site.world.entities)) for i in range(n)]
            for url in urls[:5]:  # warm up: connections, imports
                await kernel.execute(f"_ = access({url!r})")
            for url in urls:
                t = time.perf_counter()
                await kernel.execute("pass")
                empty.append(time.perf_counter() - t)
                t = time.perf_counter()
                obs = await kernel.execute(f"_ = access({url!r})")
                access.append(time.perf_counter() - t)
                assert obs.ok, obs.text
    finally:
        await kernel.close()
        fetcher.close()
    return p50(empty), p50(access)


def cache_figures(site, base: str, n: int) -> tuple[float, float]:
    """(p50 miss, p50 hit) of CachingFetcher over the served site, seconds."""
    urls = [site.url_for(i) for i in range(min(n, len(site.world.entities)))]
    with tempfile.TemporaryDirectory() as tmp, site.http_fetcher(base) as live:
        cache = CachingFetcher(live, Path(tmp) / "web.sqlite", mode="record")
        miss, hit = [], []
        for url in urls:
            t = time.perf_counter()
            cache.fetch(url)
            miss.append(time.perf_counter() - t)
        for url in urls:
            t = time.perf_counter()
            cache.fetch(url)
            hit.append(time.perf_counter() - t)
        cache.close()
    return p50(miss), p50(hit)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pages", type=int, default=300, help="world size (one page per entity)")
    ap.add_argument("--calls", type=int, default=60, help="access() calls through the gateway")
    add_smoke_flag(ap)
    args = ap.parse_args()
    if args.smoke:
        args.pages, args.calls = 30, 3
    world = make_world(seed=0, size=args.pages)
    site = world_site(world)
    print(f"world: {len(world)} pages; trafilatura installed: {has_trafilatura()}")

    extractors = ["fallback"] + (["trafilatura"] if has_trafilatura() else [])
    with site.serve() as base:
        for name in extractors:
            rtt, access = asyncio.run(gateway_figures(site, base, args.calls, name))
            figure(f"kernel round trip, empty cell p50 ({name} run)", rtt * 1e3, "ms")
            figure(
                f"access() cell through the gateway p50, {name}",
                access * 1e3,
                "ms",
                baseline=rtt * 1e3,
                target="ratio <= 2.0",
                ok=access / rtt <= 2.0,
            )
        miss, hit = cache_figures(site, base, args.calls)
        figure("cache miss (HTTP fetch + record) p50", miss * 1e3, "ms")
        figure("cache hit p50", hit * 1e3, "ms", baseline=miss * 1e3, target="ratio <= 0.1", ok=hit / miss <= 0.1)

    urls = list(site.pages)[1:]
    html = [site.pages[u] for u in urls]
    rates = {}
    for name in extractors:
        t = time.perf_counter()
        pages = [extract(h, u, name) for h, u in zip(html, urls, strict=True)]
        rates[name] = len(urls) / (time.perf_counter() - t)
        ratio = sum(tokens(p.markdown) for p in pages) / sum(tokens(h) for h in html)
        figure(
            f"extract {name}: pages/s", rates[name], "pg/s", baseline=rates["fallback"] if name != "fallback" else None
        )
        figure(f"extract {name}: Markdown / HTML tokens", ratio, "", target="<= 0.5", ok=ratio <= 0.5)
        r = recall(world, site, name)
        figure(f"extract {name}: fact recall", r, "", target="= 1.0", ok=r == 1.0)


if __name__ == "__main__":
    main()

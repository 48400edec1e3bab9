"""A small world served as pages (LocalSiteFetcher: the real extractor, no sockets) and its crawled graph."""

from __future__ import annotations

import pytest

from workbench.synth import ClosedBookPolicy, PageGraph
from workbench.web import LocalSiteFetcher
from workbench.worlds import make_world
from workbench.worlds.site import world_site


@pytest.fixture(scope="session")
def site():
    return world_site(make_world(seed=0, size="small"))


@pytest.fixture(scope="session")
def graph(site):
    g = PageGraph(LocalSiteFetcher(site))
    g.crawl(list(site.pages))
    return g


@pytest.fixture(scope="session")
def closed_book(graph):
    return ClosedBookPolicy(graph, known=0.5)

"""ASearcher's POST /access on the search server: rows for known URLs, null for unknown ones."""

from __future__ import annotations

import json

import httpx
import pytest

from workbench.errors import ConfigError
from workbench.search import BM25Retriever, Corpus
from workbench.search.server import serve_in_thread
from workbench.web import LocalSiteFetcher, PageStore, extract, write_pages_jsonl


@pytest.fixture(scope="module")
def retriever(world):
    return BM25Retriever.build(Corpus.from_rows(world.corpus()), show_progress=False)


def test_access_answers_rows_and_nulls_and_retrieve_hits_carry_urls(world, site, retriever, tmp_path):
    path = write_pages_jsonl(site, tmp_path / "pages.jsonl")
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    assert len(rows) == len(site.pages)
    for store in (PageStore.from_jsonl(path), PageStore.from_fetcher(LocalSiteFetcher(site))):
        with serve_in_thread(retriever, pages=store) as base:
            urls = [site.url_for(5), "https://nowhere.example/x", site.url_for(9) + "#frag", "junk"]
            got = httpx.post(base + "/access", json={"urls": urls}).json()["result"]
            assert got[1] is None and got[3] is None
            for row, i in ((got[0], 5), (got[2], 9)):
                url = site.url_for(i)
                assert row == {
                    "url": url,
                    "title": world.entities[i].name,
                    "contents": extract(site.pages[url], url).markdown,
                }
            hits = httpx.post(base + "/retrieve", json={"queries": [world.entities[5].name]}).json()
            assert hits["result"][0][0]["url"] == site.url_for(5)
            for bad in ({"urls": "one"}, {"urls": [1]}, {"url": []}, [], {"urls": ["x"] * 300}):
                r = httpx.post(base + "/access", json=bad)
                assert r.status_code == 422 and "urls" in r.json()["detail"]
            assert httpx.post(base + "/access", content=b"{not json").status_code == 400


def test_server_without_pages_has_no_access_route(retriever):
    with serve_in_thread(retriever) as base:
        assert httpx.post(base + "/access", json={"urls": []}).status_code in (404, 405)


def test_bad_pages_files_are_config_errors(tmp_path):
    with pytest.raises(ConfigError, match="no such pages file"):
        PageStore.from_jsonl(tmp_path / "absent.jsonl")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"url": "https://a.org/"}\n{"title": "no url"}\n')
    with pytest.raises(ConfigError, match=r"bad.jsonl:2: .*'url'"):
        PageStore.from_jsonl(bad)

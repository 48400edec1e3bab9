"""Fetchers against real HTTP servers: errors as clear tool errors, address refusals, record/replay."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from web_trouble import serve_trouble

from workbench.errors import ConfigError, ToolError
from workbench.web import Browser, CachingFetcher, HttpFetcher, LocalSiteFetcher, normalize_url, open_page


def _fetcher(base: str, **kw) -> HttpFetcher:
    return HttpFetcher(allow_hosts=[base.removeprefix("http://")], **kw)


def test_an_allow_listed_loopback_page_opens(trouble):
    with _fetcher(trouble) as f:
        page = open_page(f, trouble + "/ok#section")
    assert page.url == trouble + "/ok" and page.title == "Plain page"
    assert "The answer is forty-two." in page.markdown
    assert f"[the other page]({trouble}/other)" in page.markdown
    assert "navigation" not in page.markdown and "tracker" not in page.markdown


@pytest.mark.parametrize(
    "path, message",
    [
        ("/missing", r"HTTP 404 \(the page does not exist"),
        ("/pdf", "it is application/pdf, not an HTML page"),
        ("/big", "over the 50,000-byte limit"),
        ("/big-chunked", "over the 50,000-byte limit"),
        ("/loop-a", r"redirect loop \(.*/loop-a -> .*/loop-b -> .*/loop-a\)"),
        ("/hop0", "more than 3 redirects"),
        ("/slow", r"no complete answer within 0.5 s \(timeout_s\)"),
    ],
)
def test_each_failure_is_a_clear_tool_error(trouble, path, message):
    with _fetcher(trouble, max_bytes=50_000, timeout_s=0.5) as f:
        with pytest.raises(ToolError, match=message):
            open_page(f, trouble + path)


def test_charset_and_plain_text(trouble):
    with _fetcher(trouble) as f:
        assert "café crème" in open_page(f, trouble + "/latin1").markdown
        assert open_page(f, trouble + "/text").markdown == "plain words"


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:9/x",
        "http://[::1]:9/",
        "http://10.0.0.1/",
        "http://192.168.1.1/",
        "http://172.16.0.5/",
        "http://169.254.169.254/latest/meta-data/",
        "http://localhost:9/",
        "http://metadata.google.internal/computeMetadata/v1/",
        "http://0.0.0.0/",
        "http://100.64.0.1/",
        "http://[::ffff:127.0.0.1]/",
        "http://[fe80::1]/",
        "http://2130706433/",
    ],
)
def test_private_loopback_and_metadata_addresses_are_refused(url):
    with HttpFetcher(timeout_s=1) as f:
        with pytest.raises(ToolError, match=r"refused|does not resolve"):
            f.fetch(url)


def test_refusal_holds_after_a_redirect_from_an_allowed_host(trouble):
    with _fetcher(trouble) as f:
        with pytest.raises(ToolError, match=r"refused http://10\.1\.2\.3/secret"):
            f.fetch(trouble + "/to-private")
        with pytest.raises(ToolError, match=r"refused http://169\.254\.169\.254"):
            f.fetch(trouble + "/to-metadata")
    with HttpFetcher() as f:  # the same server without the allow-list
        with pytest.raises(ToolError, match="refused"):
            f.fetch(trouble + "/ok")


def test_other_schemes_and_garbage_urls_are_refused():
    with HttpFetcher() as f:
        for url in ("file:///etc/passwd", "ftp://ex.org/", "gopher://x", "/relative", "", "   "):
            with pytest.raises(ToolError, match=r"absolute http|non-empty string"):
                f.fetch(url)
    with pytest.raises(ConfigError):
        HttpFetcher(timeout_s=0)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=200))
def test_normalize_any_text(text):
    try:
        url = normalize_url(text)
    except ToolError as exc:
        assert "http" in str(exc)
    else:
        assert url.startswith(("http://", "https://")) and "#" not in url


def test_record_then_replay_with_the_server_stopped(tmp_path):
    db = tmp_path / "web.sqlite"
    with serve_trouble() as base:
        live = _fetcher(base)
        rec = CachingFetcher(live, db, mode="record")
        pages = [open_page(rec, base + p) for p in ("/ok", "/other", "/long")]
        with pytest.raises(ToolError, match="HTTP 404"):
            open_page(rec, base + "/missing")
        with pytest.raises(ToolError, match="redirect loop"):
            rec.fetch(base + "/loop-a")
        again = open_page(rec, base + "/ok")  # a hit
        assert again == pages[0] and rec.hits == 1 and rec.misses == 5
        rec.close()
        live.close()
    # the server is gone: replay answers the same, exactly
    replay = CachingFetcher(None, db, mode="replay")
    assert [open_page(replay, base + p) for p in ("/ok", "/other", "/long")] == pages
    with pytest.raises(ToolError, match="HTTP 404"):
        open_page(replay, base + "/missing")
    with pytest.raises(ToolError, match="redirect loop"):  # recorded errors replay too
        replay.fetch(base + "/loop-a")
    with pytest.raises(ToolError, match=r"not in the web cache .* record it first"):
        replay.fetch(base + "/never-seen")
    with pytest.raises(ConfigError, match="record it first"):
        CachingFetcher(None, tmp_path / "absent.sqlite", mode="replay")
    with pytest.raises(ConfigError, match="'record' or 'replay'"):
        CachingFetcher(None, db, mode="read")  # type: ignore[arg-type]


def test_served_site_over_http_equals_the_local_site(served):
    site, base = served
    local = Browser(LocalSiteFetcher(site))
    with site.http_fetcher(base) as f:
        remote = Browser(f)
        for i in range(0, len(site.world.entities), 7):
            url = site.url_for(i)
            assert remote.open(url) == local.open(url)
            assert remote.access(url) == local.access(url)
        with pytest.raises(ToolError, match="HTTP 404"):
            remote.open(site.base_url + "/wiki/Nobody_Here")


def test_world_corpus_urls_are_site_pages(world, site):
    for row in world.corpus():
        assert site.entity_at(row["url"]).id == int(row["id"])
        assert row["url"] in site.pages
    assert site.entity_at("https://elsewhere.org/wiki/x") is None
    assert site.entity_at("not a url") is None
    assert len(site.pages) == len(world.entities) + 1
    assert "World 3 Wiki" in site.pages[site.index_url]


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=80), st.text(max_size=40), st.integers(-3, 5))
def test_browse_tools_on_any_text_answer_or_raise_a_tool_error(site, url, query, page):
    browser = Browser(LocalSiteFetcher(site))
    for target in (url, site.url_for(0) + url):
        for call in (lambda t=target: browser.access(t, page), lambda t=target: browser.find_in_page(t, query)):
            try:
                out = call()
            except ToolError as exc:
                str(exc).encode("utf-8")
            else:
                assert isinstance(out, str)
                out.encode("utf-8")

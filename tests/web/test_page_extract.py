"""Pages, windows, find, and both extractors on world pages and hand-written HTML."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from workbench.errors import ConfigError
from workbench.web import Page, extract, find, has_trafilatura, windows

EXTRACTORS = ["fallback"] + (["trafilatura"] if has_trafilatura() else [])
BOILERPLATE = (
    "Main page",
    "Random page",
    "Recently edited",
    "cookies",
    "Privacy policy",
    "dataLayer",
    "track(",
    "Search the wiki",
    "fictional encyclopedia",
    "font-family",
)


def _facts(world, entity):
    """(label, value) of every relation of `entity`, as its infobox states it."""
    for rel in world.relations_of(entity.type):
        yield rel.phrase.capitalize(), world.lookup(entity.id, rel.name), rel


@pytest.mark.parametrize("extractor", EXTRACTORS)
def test_world_pages_keep_every_fact_and_link_and_drop_boilerplate(world, site, extractor):
    for entity in world.entities:
        url = site.url_for(entity.id)
        page = extract(site.pages[url], url, extractor)
        assert page.title == entity.name and page.url == url
        assert page.markdown.startswith(f"# {entity.name}")
        for label, value, rel in _facts(world, entity):
            if rel.target is None:
                assert re.search(rf"\| {label} \| {re.escape(value)} \|", page.markdown), (label, value)
            else:
                target = site.url_for(value)
                assert f"[{value}]({target})" in page.markdown  # the link, made absolute
                assert any(link.url == target and link.text == value for link in page.links)
        passage = world.passage(entity.id)["contents"].split("\n", 1)[1]
        assert passage in page.markdown
        for junk in BOILERPLATE:
            assert junk not in page.markdown, (junk, extractor)
        assert all(link.url.startswith("https://world3.wiki.test/wiki/") for link in page.links)


def test_fallback_keeps_tables_lists_headings_and_resolves_links():
    html = """<html><head><title>T - Site</title></head><body>
    <header><a href="/">Site</a></header><nav class="top-menu"><a href="/x">Menu</a></nav>
    <div class="sidebar">Side stuff</div>
    <article><h1>Heading One</h1><p>First <b>bold</b> para&amp;graph.</p>
    <h2>Sub</h2><ul><li>alpha</li><li><a href="b.html#frag">beta</a></li></ul>
    <ol><li>one</li><li>two</li></ol>
    <table><tr><th>k</th><th>v|w</th></tr><tr><td>a</td><td>1</td></tr></table>
    <pre>code  kept
  as is</pre><a href="javascript:alert(1)">js</a><a href="mailto:x@y">mail</a></article>
    <footer>Copyright</footer><script>alert('x')</script></body></html>"""
    page = extract(html, "https://ex.org/dir/page.html", "fallback")
    md = page.markdown
    assert page.title == "Heading One"
    assert md.split("\n\n")[:2] == ["# Heading One", "First bold para&graph."]
    assert "## Sub" in md and "- alpha" in md and "- [beta](https://ex.org/dir/b.html)" in md
    assert "1. one\n\n2. two" in md or ("1. one" in md and "2. two" in md)
    assert "| k | v\\|w |\n| --- | --- |\n| a | 1 |" in md
    assert "```\ncode  kept\n  as is\n```" in md
    for junk in ("Menu", "Side stuff", "Copyright", "alert", "Site\n"):
        assert junk not in md
    assert [link.url for link in page.links] == ["https://ex.org/dir/b.html"]


def test_title_falls_back_to_the_title_tag_and_unknown_extractor_is_refused():
    page = extract("<title> Only  title </title><p>x</p>", "https://ex.org/", "fallback")
    assert page.title == "Only title" and page.markdown == "# Only title\n\nx"
    with pytest.raises(ConfigError, match="use 'auto', 'fallback' or 'trafilatura'"):
        extract("<p>x</p>", "https://ex.org/", "readability")  # type: ignore[arg-type]
    if not has_trafilatura():
        with pytest.raises(ConfigError, match=r"workbench\[web\]"):
            extract("<p>x</p>", "https://ex.org/", "trafilatura")


@settings(max_examples=200, deadline=None)
@given(st.text(), st.sampled_from(["fallback", *EXTRACTORS]))
def test_any_text_extracts_to_valid_text(html, extractor):
    page = extract(html, "https://ex.org/a", extractor)
    page.markdown.encode("utf-8")  # no lone surrogates
    page.title.encode("utf-8")
    assert all(link.url.startswith(("http://", "https://")) for link in page.links)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            [
                "<p>",
                "</p>",
                "<div>",
                "</div>",
                "<table>",
                "<tr>",
                "<td>",
                "</td>",
                "</table>",
                "<a href='/x'>",
                "</a>",
                "<ul>",
                "<li>",
                "</ul>",
                "<h2>",
                "</h2>",
                "<script>",
                "</script>",
                "<nav>",
                "</nav>",
                "<pre>",
                "</pre>",
                "<br>",
                "word",
                " ",
                "\n",
                "&amp;",
                "<",
                ">",
            ]
        ),
        max_size=60,
    )
)
def test_broken_tag_soup_never_raises(parts):
    extract("".join(parts), "https://ex.org/", "fallback")


def test_windows_are_numbered_bounded_and_cover_the_text():
    md = "\n\n".join(f"Paragraph {i} " + "w" * (i * 37 % 300) for i in range(80))
    page = Page("https://ex.org/", "T", md)
    wins = windows(page, 1000)
    n = len(wins)
    assert n > 5
    for i, w in enumerate(wins, 1):
        head, _, body = w.partition("\n")
        assert head == f">>>> Page {i}/{n} >>>>" and len(body) <= 1000
    assert re.sub(r"\s+", "", "".join(w.partition("\n")[2] for w in wins)) == re.sub(r"\s+", "", md)
    assert page.windows(1000) == wins
    with pytest.raises(ValueError, match="at least 100"):
        windows(page, 10)


@settings(max_examples=150, deadline=None)
@given(st.text(max_size=3000), st.integers(100, 800))
def test_windows_of_any_text(text, size):
    wins = windows(Page("https://ex.org/", "", text), size)
    assert wins and all(len(w.partition("\n")[2]) <= size for w in wins)
    assert re.sub(r"\s", "", "".join(w.partition("\n")[2] for w in wins)) == re.sub(r"\s", "", text)


def test_find_gives_passages_with_context_and_merges_overlaps():
    md = "alpha beta gamma. " * 3 + "x" * 500 + " The Director is Ann. " + "y" * 500
    page = Page("https://ex.org/", "T", md)
    found = find(page, "director", 20)
    assert found == ["…" + md[md.index("Director") - 20 : md.index("Director") + 8 + 20].strip() + "…"]
    assert len(find(page, "beta", 10)) == 1  # three close matches merge into one passage
    assert find(page, "born in Paris", 10) == []
    assert find(page, "   ", 10) == []
    words = Page("https://ex.org/", "T", "line one\nAnn was born in 1950 in Paris\nline three")
    assert find(words, "born Paris", 0) == ["…Ann was born in 1950 in Paris…"]


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=500), st.text(max_size=20))
def test_find_any_text(text, query):
    found = find(Page("https://ex.org/", "", text), query, 30)
    for passage in found:
        assert passage.removeprefix("…").removesuffix("…") in text
    if query.strip() and query.strip().lower() in text.lower() and query.strip().lower() == query.strip().casefold():
        assert found

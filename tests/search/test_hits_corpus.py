import json

import pytest

from workbench.errors import ConfigError
from workbench.search import Corpus, Hit, format_hits, split_contents


def hits():
    return [
        Hit.from_row({"id": "0", "contents": '"Alpha"\nFirst text.'}, 0.9),
        Hit.from_row({"id": "1", "title": "Beta", "text": "Second text."}, 0.5),
    ]


def test_split_contents_strips_quotes_and_keeps_multiline_text():
    assert split_contents('"A B"\nline 1\nline 2') == ("A B", "line 1\nline 2")
    assert split_contents("no title line") == ("no title line", "")


def test_hit_from_title_text_row_builds_search_r1_contents():
    h = hits()[1]
    assert (h.id, h.title, h.text, h.contents) == ("1", "Beta", "Second text.", '"Beta"\nSecond text.')
    assert h.to_row()["contents"] == '"Beta"\nSecond text.'


def test_format_styles():
    assert format_hits(hits()) == "Doc 1 (Title: Alpha)\nFirst text.\n\nDoc 2 (Title: Beta)\nSecond text."
    assert format_hits(hits(), style="search_r1") == "Doc 1(Title: Alpha) First text.\nDoc 2(Title: Beta) Second text."
    assert format_hits(hits()[:1], style="search_r1", quote_titles=True) == 'Doc 1(Title: "Alpha") First text.'
    assert format_hits(hits(), template="[{i}] {title} ({score:.1f})", sep=" | ") == "[1] Alpha (0.9) | [2] Beta (0.5)"
    with pytest.raises(ConfigError, match="drzero"):
        format_hits(hits(), style="bing")


def test_corpus_from_jsonl_both_row_shapes(tmp_path):
    p = tmp_path / "c.jsonl"
    p.write_text(
        json.dumps({"id": "a", "contents": '"T"\nx', "url": "u"})
        + "\n\n"
        + json.dumps({"title": "U", "text": "y"})
        + "\n"
    )
    c = Corpus.from_jsonl(p)
    assert len(c) == 2 and c[0]["url"] == "u" and c[1] == {"id": "1", "title": "U", "text": "y", "contents": '"U"\ny'}
    assert c.hit(1, 2.0).title == "U"


def test_malformed_corpus_line_names_the_line(tmp_path):
    p = tmp_path / "bad.jsonl"
    p.write_text(json.dumps({"id": "0", "contents": "ok"}) + "\n{not json\n")
    with pytest.raises(ConfigError, match=r"bad\.jsonl:2: not valid JSON"):
        Corpus.from_jsonl(p)
    p.write_text(json.dumps({"id": "0", "body": "no contents"}) + "\n")
    with pytest.raises(ConfigError, match=r"bad\.jsonl:1: .*needs 'contents'"):
        Corpus.from_jsonl(p)
    with pytest.raises(ConfigError, match="does not exist"):
        Corpus.from_jsonl(tmp_path / "missing.jsonl")


def test_search_package_exports_match_all():
    import workbench.search as s

    assert sorted(s.__all__) == sorted(n for n in s.__all__ if hasattr(s, n))

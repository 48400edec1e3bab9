"""`Corpus.open`: rows read on demand through a row-offset file equal `Corpus.from_jsonl`'s, and
indexes loaded with `mmap=True` serve the same hits without holding the corpus in memory."""

from __future__ import annotations

import json
import os
import pickle
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import tracemalloc
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from workbench.errors import ConfigError
from workbench.search import BM25Retriever, Corpus, load_index, serve_in_thread
from workbench.search.corpus import JsonlRows, scan_offsets


@pytest.fixture(autouse=True, scope="module")
def private_cache():
    """Offsets that cannot go beside a file go to a cache of this module's own."""
    with tempfile.TemporaryDirectory() as d, pytest.MonkeyPatch.context() as mp:
        mp.setenv("XDG_CACHE_HOME", d)
        yield Path(d)


def sidecar(p: Path) -> Path:
    return p.with_name(p.name + ".offsets.npy")


def outcome(fn):
    """What `fn()` gives: ("ok", value) or ("error", the ConfigError message)."""
    try:
        return "ok", fn()
    except ConfigError as exc:
        return "error", str(exc)


def lazy_rows(path: Path) -> list:
    """Every row of `Corpus.open(path)` read by index (raises at the first bad row)."""
    c = Corpus.open(path)
    return [c[i] for i in range(len(c))]


# -- equal rows, by property ----------------------------------------------------------------------

SURROGATES = st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF)
TEXT = st.lists(st.one_of(st.text(max_size=12), SURROGATES), max_size=4).map("".join)
ROW = st.one_of(
    st.fixed_dictionaries({"id": TEXT, "contents": TEXT}),
    st.fixed_dictionaries({"contents": TEXT}),  # id defaults to the row index
    st.fixed_dictionaries({"title": TEXT, "text": TEXT}, optional={"id": TEXT, "url": TEXT}),
)
BLANK = st.sampled_from([b"", b" ", b"\t", b"  \r", b"\x0b\x0c "])


@st.composite
def jsonl_files(draw) -> tuple[bytes, int]:
    """JSONL bytes: rows (escaped or raw UTF-8, lone surrogates as \\u escapes or as invalid bytes),
    blank lines between them, LF or CRLF ends, maybe no final newline; and the number of rows."""
    lines, n = [], 0
    for item in draw(st.lists(st.one_of(ROW, BLANK), max_size=12)):
        if isinstance(item, bytes):
            lines.append(item)
        else:
            n += 1
            lines.append(json.dumps(item, ensure_ascii=draw(st.booleans())).encode("utf-8", "surrogatepass"))
    ends = [draw(st.sampled_from([b"\n", b"\r\n"])) for _ in lines]
    data = b"".join(line + end for line, end in zip(lines, ends, strict=True))
    if lines and draw(st.booleans()):
        data = data[: -len(ends[-1])]
    return data, n


@settings(max_examples=150, deadline=None)
@given(jsonl_files(), st.floats(allow_nan=False))
def test_open_gives_the_rows_ids_and_hits_of_from_jsonl(file, score):
    data, n = file
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "c.jsonl"
        p.write_bytes(data)
        eager = Corpus.from_jsonl(p)
        lazy = Corpus.open(p)
        assert len(lazy) == len(eager) == n
        assert [lazy[i] for i in range(n)] == eager.rows
        assert list(lazy) == list(lazy.rows) == eager.rows
        assert [r["id"] for r in lazy.rows] == [r["id"] for r in eager.rows]
        assert [lazy.hit(i, score) for i in range(n)] == [eager.hit(i, score) for i in range(n)]
        assert list(lazy.contents()) == eager.contents()
        assert lazy.rows[1:-1:2] == eager.rows[1:-1:2]
        if n:
            assert lazy[-1] == eager[-1] and lazy[-n] == eager[0]
            assert lazy.contents()[-1] == eager.contents()[-1]
        for bad in (n, -n - 1):
            with pytest.raises(IndexError):
                lazy[bad]


LINE = st.one_of(
    ROW.map(lambda r: json.dumps(r).encode()),
    st.binary(max_size=20),
    st.sampled_from([b"[1]", b"{}", b'{"contents": 3}', b'{"text": "a"', b"\xef\xbb\xbf{}"]),
)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.one_of(LINE, BLANK), max_size=8).map(b"\n".join))
@example(b'"\n{"id": "", "contents": ""}')  # the line's newline once reached json.loads in one reader only
def test_any_bytes_give_the_same_rows_or_the_same_error(data):
    """Arbitrary lines (bad JSON, raw invalid UTF-8, non-objects, a BOM): the first bad row read
    lazily raises exactly the error `from_jsonl` raises at load."""
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "c.jsonl"
        p.write_bytes(data)
        assert outcome(lambda: lazy_rows(p)) == outcome(lambda: Corpus.from_jsonl(p).rows)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.one_of(st.binary(max_size=6), BLANK, st.just(b"{}")), max_size=12).map(b"\n".join), st.integers(1, 9)
)
def test_scan_offsets_finds_every_non_blank_line_across_chunk_edges(data, chunk):
    want, at = [], 0
    for line in data.split(b"\n"):
        if line.strip():
            want.append(at)
        at += len(line) + 1
    with tempfile.TemporaryFile() as f:
        f.write(data)
        f.flush()
        parts = scan_offsets(f.fileno(), len(data), chunk=chunk, show_progress=False)
    assert [int(x) for part in parts for x in part] == want


def test_invalid_utf8_becomes_the_same_replacement_text(tmp_path):
    p = tmp_path / "c.jsonl"
    p.write_bytes(
        b'{"contents": "caf\xc3\xa9 \xff\xfe end \xe2\x82", "title_\xc0": 1}\n{"title": "\xed\xa0\x80", "text": "x"}\n'
    )
    lazy, eager = Corpus.open(p), Corpus.from_jsonl(p)
    assert lazy[0] == eager[0] == {"contents": "café \ufffd\ufffd end \ufffd", "title_\ufffd": 1, "id": "0"}
    assert lazy[1]["contents"] == eager[1]["contents"] == '"\ufffd\ufffd\ufffd"\nx'
    escaped = tmp_path / "s.jsonl"
    escaped.write_text('{"contents": "a\\ud800b"}\n')
    assert Corpus.open(escaped)[0] == Corpus.from_jsonl(escaped)[0] == {"contents": "a\ud800b", "id": "0"}


# -- errors ---------------------------------------------------------------------------------------


def test_a_malformed_line_raises_when_its_row_is_read(tmp_path):
    p = tmp_path / "c.jsonl"
    p.write_text('{"contents": "a"}\n\n{"contents": "b"}\n  \n{"contents": oops}\n[1, 2]\n{"contents": "c"}\n')
    lazy = Corpus.open(p)  # only row 0 is read at open
    assert len(lazy) == 5 and lazy[1]["contents"] == "b" and lazy[4] == {"contents": "c", "id": "4"}
    with pytest.raises(
        ConfigError, match=r"c\.jsonl:5: not valid JSON .*each line must be one JSON object like"
    ) as bad:
        lazy[2]
    with pytest.raises(ConfigError) as eager:
        Corpus.from_jsonl(p)
    assert str(bad.value) == str(eager.value)
    with pytest.raises(ConfigError, match=r"c\.jsonl:6: a corpus row must be a JSON object, got list"):
        lazy[3]
    with pytest.raises(ConfigError, match=r"c\.jsonl:5"):
        list(lazy)
    first_bad = tmp_path / "first.jsonl"
    first_bad.write_text('\n{"title": "t"}\n')
    with pytest.raises(ConfigError, match=r"first\.jsonl:2: a corpus row needs 'contents'"):
        Corpus.open(first_bad)
    with pytest.raises(ConfigError, match="does not exist; pass a JSONL file"):
        Corpus.open(tmp_path / "missing.jsonl")


# -- the offsets file -----------------------------------------------------------------------------


def test_offsets_are_reused_and_rebuilt_when_the_file_changes(tmp_path):
    p = tmp_path / "c.jsonl"
    p.write_text("".join(json.dumps({"contents": f"row {i}"}) + "\n" for i in range(50)))
    assert len(Corpus.open(p)) == 50
    made = sidecar(p).stat()
    assert len(Corpus.open(p)) == 50
    again = sidecar(p).stat()
    assert (again.st_ino, again.st_mtime_ns) == (made.st_ino, made.st_mtime_ns)  # read, not rewritten

    with p.open("a") as f:  # appended: size and mtime change
        f.write('{"contents": "new"}\n')
    c = Corpus.open(p)
    assert len(c) == 51 and c[-1]["contents"] == "new"
    assert sidecar(p).stat().st_ino != made.st_ino

    st_ = p.stat()  # same size, new bytes, new mtime
    p.write_text(p.read_text().replace('row 1"', 'row X"', 1))
    os.utime(p, ns=(st_.st_atime_ns, st_.st_mtime_ns + 1_000_000))
    assert Corpus.open(p)[1]["contents"] == "row X"

    p.write_text('\n\n{"contents": "moved"}\n')  # shorter: the old offsets must not be trusted
    c = Corpus.open(p)
    assert len(c) == 1 and c[0] == {"contents": "moved", "id": "0"}

    sidecar(p).write_bytes(b"not an array")  # a damaged offsets file is rebuilt, never an error
    assert Corpus.open(p)[0]["contents"] == "moved"
    assert len(Corpus.open(p)) == 1


def test_open_corpus_pickles_by_path(tmp_path):
    p = tmp_path / "c.jsonl"
    p.write_text('{"contents": "a"}\n{"contents": "b"}\n')
    c = pickle.loads(pickle.dumps(Corpus.open(p)))
    assert isinstance(c.rows, JsonlRows) and c[1] == {"contents": "b", "id": "1"}


READ = (
    "import json, sys; from workbench.search import Corpus; c = Corpus.open(sys.argv[1]); "
    "print(json.dumps([c[i] for i in range(len(c))]))"
)


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap for a read-only mount")
@pytest.mark.parametrize("cache_writable", [True, False])
def test_a_read_only_directory_works(tmp_path, cache_writable):
    """A real read-only mount (root ignores file modes): offsets go to the cache, else stay in memory."""
    data, cache = tmp_path / "data", tmp_path / "cache"
    data.mkdir()
    cache.mkdir()
    p = data / "c.jsonl"
    p.write_text("".join(json.dumps({"title": f"T{i}", "text": f"x{i}"}) + "\n\n" for i in range(20)))
    binds = ["--ro-bind", str(data), str(data)] + ([] if cache_writable else ["--ro-bind", str(cache), str(cache)])
    out = subprocess.run(
        ["bwrap", "--dev-bind", "/", "/", *binds, "--", sys.executable, "-c", READ, str(p)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "XDG_CACHE_HOME": str(cache), "PYTHONPATH": os.getcwd()},
    )
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == Corpus.from_jsonl(p).rows
    assert not sidecar(p).exists()
    cached = list(cache.rglob("*.offsets.npy"))
    assert [f.name.endswith("-c.jsonl.offsets.npy") for f in cached] == ([True] if cache_writable else [])


def test_eight_threads_read_the_right_rows(tmp_path):
    p = tmp_path / "c.jsonl"
    p.write_text(
        "".join(json.dumps({"id": f"r{i}", "contents": f"passage {i} " + "é" * (i % 50)}) + "\n" for i in range(3000))
    )
    eager, lazy = Corpus.from_jsonl(p), Corpus.open(p)
    start = threading.Barrier(8)

    def reader(seed: int) -> int:
        rng = random.Random(seed)
        start.wait()
        wrong = 0
        for _ in range(1500):
            i = rng.randrange(-3000, 3000)
            wrong += lazy[i] != eager[i] or lazy.hit(i, 1.0) != eager.hit(i, 1.0)
        return wrong

    with ThreadPoolExecutor(8) as pool:
        assert list(pool.map(reader, range(8))) == [0] * 8


@pytest.mark.slow
def test_opening_a_50_mb_corpus_allocates_far_less_than_the_file(tmp_path):
    p = tmp_path / "big.jsonl"
    filler = "lorem ipsum dolor sit amet " * 24
    with p.open("w") as f:
        for i in range(75_000):
            f.write(json.dumps({"id": str(i), "contents": f'"Title {i}"\n{filler}'}) + "\n")
    size = p.stat().st_size
    assert size > 48e6
    import tqdm.auto  # noqa: F401  (imported before measuring: its import is not the corpus's cost)

    tracemalloc.start()
    try:
        c = Corpus.open(p)
        rows = [c[i] for i in (0, 37_000, -1)]
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert [r["id"] for r in rows] == ["0", "37000", "74999"]
    offsets = 8 * len(c)  # the offsets array itself, and its parts while they are joined
    assert peak < size / 10 + 2 * offsets, (peak, size)


# -- indexes and the server -----------------------------------------------------------------------

QUESTIONS = [
    "Who founded the city?",
    "What is the river known for?",
    "Which company makes glass?",
    "festival founded in 1400",
    "zzz unknown words only",
]


@pytest.fixture(scope="module")
def saved_bm25(world, tmp_path_factory):
    d = tmp_path_factory.mktemp("bm25")
    BM25Retriever.build(world[0], show_progress=False).save(d)
    return d


def test_bm25_loaded_with_mmap_serves_the_same_hits(saved_bm25):
    lazy, eager = BM25Retriever.load(saved_bm25), BM25Retriever.load(saved_bm25, mmap=False)
    assert isinstance(lazy.corpus.rows, JsonlRows) and isinstance(eager.corpus.rows, list)
    assert lazy.retrieve(QUESTIONS, top_k=5) == eager.retrieve(QUESTIONS, top_k=5)
    via_index = load_index(saved_bm25)
    assert isinstance(via_index.corpus.rows, JsonlRows)
    assert via_index.retrieve(QUESTIONS, top_k=3) == eager.retrieve(QUESTIONS, top_k=3)


def test_serve_search_over_a_lazily_loaded_index_answers_identically(world, tmp_path):
    rows = [*list(world[0].rows), {"id": "odd", "contents": '"Qwyxz �"\nqwyxz holds a lone surrogate'}]
    d = tmp_path / "idx"
    BM25Retriever.build(Corpus.from_rows(rows), show_progress=False).save(d)
    lazy, eager = load_index(d), load_index(d, mmap=False)
    assert isinstance(lazy.corpus.rows, JsonlRows)
    bodies = [
        {"queries": [*QUESTIONS, "qwyxz"], "topk": 4, "return_scores": True},
        {"queries": QUESTIONS[:2], "return_scores": False},
    ]
    answers = []
    with serve_in_thread(lazy, topk=3) as lazy_url, serve_in_thread(eager, topk=3) as eager_url:
        for body in bodies:
            got = httpx.post(lazy_url + "/retrieve", json=body, timeout=30)
            want = httpx.post(eager_url + "/retrieve", json=body, timeout=30)
            assert got.status_code == want.status_code == 200
            assert got.json() == want.json()
            answers.append(got.json()["result"])
    assert len(answers[0]) == 6 and all(len(r) == 4 for r in answers[0])
    assert all(len(r) == 3 and "id" in r[0] for r in answers[1])  # server default topk, bare rows
    odd = answers[0][-1][0]["document"]
    assert odd["id"] == "odd" and odd["contents"].startswith('"Qwyxz \ufffd"')

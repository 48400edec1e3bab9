"""A passage corpus in Search-R1's JSONL format, addressed by row index.

Each line is `{"id": "0", "contents": "\\"Title\\"\\ntext"}` (or `{"id", "title", "text"}`, which
is converted). Rows keep any extra keys (e.g. ASearcher's `url`). Index row *i* is corpus row *i*:
the JSONL order is the id space, exactly as in Search-R1.

    corpus = Corpus.from_jsonl("wiki.jsonl")   # every row in memory
    corpus = Corpus.open("wiki.jsonl")         # rows read from the file on demand (what indexes load)
    corpus = Corpus.from_rows([{"title": "Ada", "text": "Ada Lovelace was ..."}])
    corpus[0]            # {"id": "0", "contents": "\\"Ada\\"\\nAda Lovelace was ..."}
    corpus.hit(0, 0.87)  # Hit(id="0", title="Ada", ...)

Lines end at `\\n` (a `\\r` before it is JSON whitespace); a line of ASCII whitespace only is skipped
and takes no row; ids default to the row index; invalid UTF-8 becomes U+FFFD (`safe_bytes`). Both
readers parse a line with the one function `parse_line`, so they give equal rows.

`Corpus.open` keeps one 8-byte offset per row: the byte start of every non-blank line, found by a
scan of the raw bytes (no JSON parsing) and saved beside the file as `FILE.offsets.npy`, stamped
with the file's size and mtime so a changed file is scanned again. Where that directory is
read-only the offsets go to `$XDG_CACHE_HOME/workbench/offsets/`, else stay in memory. A row is
one `os.pread` and one `json.loads`; threads may read rows concurrently. The file must not change
while open: a shorter file raises `RetrievalError`.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import operator
import os
import threading
import weakref
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, overload

import numpy as np

from workbench.errors import ConfigError, RetrievalError
from workbench.passages import join_contents
from workbench.safetext import has_surrogates, safe_bytes
from workbench.search.hits import Hit

Where = str | Callable[[], str]  # names a row in errors; a callable is called only to raise

_EXAMPLE = '{"id": "0", "contents": "\\"Title\\"\\ntext"}'


def normalise_row(row: Any, where: Where) -> dict[str, Any]:
    """Check one row and give it `contents`. `where` names the row in errors."""

    def error(problem: str) -> ConfigError:
        return ConfigError(f"{where() if callable(where) else where}: {problem}")

    if not isinstance(row, dict):
        raise error(f"a corpus row must be a JSON object, got {type(row).__name__}")
    out = dict(row)
    if "contents" in out:
        if not isinstance(out["contents"], str):
            raise error("'contents' must be a string")
    elif "text" in out:
        out["contents"] = join_contents(str(out.get("title", "")), str(out["text"]))
    else:
        raise error(f"a corpus row needs 'contents' (\"Title\"\\ntext) or 'title' + 'text'; got keys {sorted(out)}")
    return out


def parse_line(line: bytes, index: int, where: Where) -> dict[str, Any]:
    """One JSONL line (bytes) as a normalised row whose id defaults to `index`."""
    try:
        row = json.loads(safe_bytes(line))
    except (ValueError, RecursionError) as exc:
        msg = getattr(exc, "msg", None) or str(exc)
        raise ConfigError(
            f"{where() if callable(where) else where}: not valid JSON ({msg}); each line must be "
            f"one JSON object like {_EXAMPLE}"
        ) from None
    r = normalise_row(row, where)
    r["id"] = str(r.get("id", index))
    return r


def _existing(path: str | Path) -> Path:
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"corpus file {path} does not exist; pass a JSONL file with one passage per line")
    return path


def iter_jsonl(path: str | Path) -> Iterator[dict[str, Any]]:
    """Stream the normalised rows of a JSONL corpus. A malformed line raises `ConfigError`
    naming `path:line`."""
    path = _existing(path)
    n = 0
    with path.open("rb") as f:
        for lineno, line in enumerate(f, start=1):
            if line.strip():  # parsed without its newline, as a lazily read row is

                def where(at: int = lineno) -> str:
                    return f"{path}:{at}"

                yield parse_line(line.removesuffix(b"\n"), n, where)
                n += 1


# -- row offsets ----------------------------------------------------------------------------------

_MAGIC = int.from_bytes(b"wbrows01", "little")  # offsets file: [magic, size, mtime_ns, offset...]
_HEAD = 3
_CHUNK = 1 << 20  # scan buffer: small enough that opening allocates little, large enough for disk speed
_PROGRESS_FROM = 256 << 20  # a progress bar for files from this size (when show_progress is None)
_NOT_SPACE = np.ones(256, dtype=bool)
_NOT_SPACE[list(b" \t\n\r\x0b\x0c")] = False  # what bytes.strip() strips


def _filled(a: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Whether each piece `a[starts[j]:ends[j]]` (never empty) holds a byte other than ASCII space.
    Per piece, not per byte: a row starts with `{`; only pieces starting with a space get a full look."""
    filled = _NOT_SPACE[a[starts]]
    for j in np.flatnonzero(~filled & (ends - starts > 1)):
        filled[j] = _NOT_SPACE[a[starts[j] : ends[j]]].any()
    return filled


def scan_offsets(fd: int, size: int, *, show_progress: bool | None = None, chunk: int = _CHUNK) -> list[np.ndarray]:
    """The byte offset of every non-blank line of the open file `fd` (its first `size` bytes), in
    parts to concatenate. Reads the raw bytes `chunk` bytes at a time; parses no JSON."""
    from tqdm.auto import tqdm

    buf = bytearray(chunk)
    view = np.frombuffer(buf, dtype=np.uint8)
    parts: list[np.ndarray] = []
    start, filled = 0, False  # the line still open at the end of the last chunk: offset, has a non-space
    base = 0
    show = size >= _PROGRESS_FROM if show_progress is None else show_progress
    with tqdm(total=size, unit="B", unit_scale=True, desc="indexing corpus rows", disable=not show) as bar:
        while base < size and (n := os.preadv(fd, [buf], base)):
            n = min(n, size - base)
            a = view[:n]
            cuts = np.flatnonzero(a == 10) + 1  # one past each newline
            k = len(cuts)
            open_tail = k == 0 or cuts[-1] < n  # the chunk ends inside a line
            seg_start = np.concatenate(([0], cuts if open_tail else cuts[:-1]))
            seg_filled = _filled(a, seg_start, np.concatenate((cuts, [n])) if open_tail else cuts)
            seg_filled[0] |= filled  # the first piece continues the line left open
            if k:
                starts = np.concatenate(([start], base + cuts[:-1]))
                parts.append(starts[seg_filled[:k]])
                start = base + int(cuts[-1])
            filled = open_tail and bool(seg_filled[-1])
            base += n
            bar.update(n)
    if filled:
        parts.append(np.array([start]))
    return parts


def _offset_files(path: Path) -> list[Path]:
    """Where the offsets of `path` are kept: beside it, else in the user cache."""
    key = hashlib.sha1(str(path.resolve()).encode("utf-8", "surrogateescape")).hexdigest()[:16]
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "workbench" / "offsets"
    return [path.with_name(path.name + ".offsets.npy"), cache / f"{key}-{path.name}.offsets.npy"]


def _read_offsets(file: Path, stamp: np.ndarray) -> np.ndarray | None:
    try:
        arr = np.load(file, mmap_mode="r", allow_pickle=False)
    except (OSError, ValueError, EOFError):
        return None
    ok = arr.dtype == np.uint64 and arr.ndim == 1 and len(arr) >= _HEAD and (arr[:_HEAD] == stamp).all()
    return arr[_HEAD:] if ok and (len(arr) == _HEAD or int(arr[-1]) < int(stamp[1])) else None


def _write_offsets(file: Path, arr: np.ndarray) -> bool:
    tmp = file.with_name(f".{file.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        file.parent.mkdir(parents=True, exist_ok=True)
        with tmp.open("wb") as f:
            np.save(f, arr)
        os.replace(tmp, file)
        return True
    except OSError:
        with contextlib.suppress(OSError):
            tmp.unlink()
        return False


def row_offsets(path: Path, fd: int, *, show_progress: bool | None = None) -> np.ndarray:
    """The offsets of `path`'s rows (open as `fd`): from its offsets file when that matches the
    file's size and mtime, else scanned and saved (beside it, else in the cache, else nowhere)."""
    st = os.fstat(fd)
    stamp = np.array([_MAGIC, st.st_size, st.st_mtime_ns], dtype=np.uint64)
    files = _offset_files(path)
    for file in files:
        if (found := _read_offsets(file, stamp)) is not None:
            return found
    parts = scan_offsets(fd, st.st_size, show_progress=show_progress)
    arr = np.concatenate([stamp, *parts], dtype=np.uint64, casting="unsafe")
    for file in files:
        if _write_offsets(file, arr) and (found := _read_offsets(file, stamp)) is not None:
            return found  # memory-mapped: the pages are shared and dropped under pressure
    return arr[_HEAD:]


class JsonlRows(Sequence[dict[str, Any]]):
    """The rows of a JSONL file as a read-only sequence, each parsed when read (see the module
    docstring). Reading is thread-safe; pickling reopens the file by path."""

    def __init__(self, path: str | Path, *, show_progress: bool | None = None):
        self.path = _existing(path)
        fd = os.open(self.path, os.O_RDONLY | os.O_CLOEXEC)
        self._close = weakref.finalize(self, os.close, fd)
        self._fd = fd
        self._size = os.fstat(fd).st_size
        self._offsets = row_offsets(self.path, fd, show_progress=show_progress)

    def __len__(self) -> int:
        return len(self._offsets)

    @overload
    def __getitem__(self, i: int) -> dict[str, Any]: ...

    @overload
    def __getitem__(self, i: slice) -> list[dict[str, Any]]: ...

    def __getitem__(self, i: int | slice) -> dict[str, Any] | list[dict[str, Any]]:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        j = operator.index(i)
        if j < 0:
            j += len(self)
        if not 0 <= j < len(self):
            raise IndexError(f"corpus row {i} out of range ({len(self)} rows)")
        return parse_line(self.line(j), j, lambda: f"{self.path}:{self.line_number(j)}")

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return iter_jsonl(self.path)  # one sequential read, not a pread per row

    def line(self, i: int) -> bytes:
        """The raw bytes of row `i`'s line (without its newline)."""
        start = int(self._offsets[i])
        end = int(self._offsets[i + 1]) if i + 1 < len(self._offsets) else self._size
        data = os.pread(self._fd, end - start, start)
        if len(data) < end - start:
            raise RetrievalError(
                f"{self.path} is shorter than when it was opened; a corpus file must not change "
                "while in use: reopen it (reload the index)"
            )
        cut = data.find(b"\n")
        return data if cut < 0 else data[:cut]

    def line_number(self, i: int) -> int:
        """The physical (1-based) line number of row `i` (counts the newlines before it)."""
        start, at, n = int(self._offsets[i]), 0, 1
        while at < start:
            chunk = os.pread(self._fd, min(_CHUNK, start - at), at)
            if not chunk:
                break
            n += chunk.count(b"\n")
            at += len(chunk)
        return n

    def close(self) -> None:
        """Close the file (also done when the object is collected)."""
        self._close()

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.path,))

    def __repr__(self) -> str:
        return f"JsonlRows({str(self.path)!r}, {len(self)} rows)"


class _Contents(Sequence[str]):
    """Every row's `contents`, read on demand (what `Corpus.contents()` gives for an open file)."""

    def __init__(self, rows: Sequence[dict[str, Any]]):
        self.rows = rows

    def __len__(self) -> int:
        return len(self.rows)

    @overload
    def __getitem__(self, i: int) -> str: ...
    @overload
    def __getitem__(self, i: slice) -> list[str]: ...
    def __getitem__(self, i: int | slice) -> str | list[str]:
        if isinstance(i, slice):
            return [r["contents"] for r in self.rows[i]]
        contents: str = self.rows[i]["contents"]
        return contents

    def __iter__(self) -> Iterator[str]:
        return (r["contents"] for r in self.rows)


class Corpus:
    """Normalised rows, in memory (`from_jsonl`, `from_rows`) or read from a file on demand (`open`);
    ids default to the row index."""

    def __init__(self, rows: Sequence[dict[str, Any]], path: Path | None = None):
        self.rows = rows
        self.path = path

    @classmethod
    def from_rows(cls, rows: Iterable[dict[str, Any]]) -> Corpus:
        out = []
        for i, row in enumerate(rows):
            r = normalise_row(row, f"corpus row {i}")
            r["id"] = str(r.get("id", i))
            out.append(r)
        return cls(out)

    @classmethod
    def from_jsonl(cls, path: str | Path) -> Corpus:
        """Read every row of a JSONL file. A malformed line raises `ConfigError` naming its line number."""
        path = Path(path)
        return cls(list(iter_jsonl(path)), path=path)

    @classmethod
    def open(cls, path: str | Path, *, show_progress: bool | None = None) -> Corpus:
        """A corpus over a JSONL file whose rows are read on demand (equal to `from_jsonl`'s). The
        first open scans the file for its row offsets (a progress bar from 256 MB); a malformed line
        raises `ConfigError` when its row is read (row 0 is read here)."""
        rows = JsonlRows(path, show_progress=show_progress)
        if len(rows):
            _ = rows[0]  # a file that is not Search-R1 JSONL fails here, not at the first query
        return cls(rows, path=rows.path)

    def to_jsonl(self, path: str | Path) -> Path:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("w", encoding="utf-8") as f:
            for r in self.rows:
                line = json.dumps(r, ensure_ascii=False)
                if has_surrogates(line):  # a lone surrogate has no UTF-8 form: keep it as a \u escape
                    line = json.dumps(r)
                f.write(line + "\n")
        return path

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, i: int) -> dict[str, Any]:
        return self.rows[i]

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return iter(self.rows)

    def contents(self) -> Sequence[str]:
        """Every row's `contents`, in row order (what indexes are built from): a list in memory, a
        view that reads rows on demand for an open file."""
        if isinstance(self.rows, list):
            return [r["contents"] for r in self.rows]
        return _Contents(self.rows)

    def hit(self, i: int, score: float) -> Hit:
        """Row `i` as a `Hit` carrying `score`."""
        return Hit.from_row(self.rows[i], score)

    def __repr__(self) -> str:
        src = f", path={str(self.path)!r}" if self.path else ""
        kind = "" if isinstance(self.rows, list) else ", read on demand"
        return f"Corpus({len(self)} rows{src}{kind})"

"""Fetchers: how a URL becomes bytes. All sync (the gateway runs sync tools in a thread).

    LocalSiteFetcher(site)                   pages from memory (a WorldSite or {url: html}); no sockets
    HttpFetcher(allow_hosts=("127.0.0.1:8000",), timeout_s=10, max_bytes=5_000_000, max_redirects=3)
    CachingFetcher(inner, "runs/x/web.sqlite", mode="record")   # later: mode="replay", offline

`HttpFetcher` refuses loopback, private, link-local, reserved and cloud-metadata addresses, checked
on every hop of a redirect chain and pinned for the connection (no second DNS answer), unless the
host (or host:port) is allow-listed. Every failure is a `ToolError` that says what happened.
"""

from __future__ import annotations

import ipaddress
import socket
import sqlite3
import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol, runtime_checkable
from urllib.parse import urldefrag, urljoin, urlsplit, urlunsplit

import httpx

from workbench.errors import ConfigError, ToolError

METADATA_HOSTS = frozenset({"metadata.google.internal", "metadata", "instance-data"})


@dataclass(frozen=True)
class FetchResult:
    """What a fetch returned; `final_url` is where redirects ended."""

    url: str
    final_url: str
    status: int
    content_type: str
    body: bytes
    elapsed_s: float = 0.0


@runtime_checkable
class Fetcher(Protocol):
    """What a `Browser` reads pages through: `fetch(url)` returns a `FetchResult` (`HttpFetcher`, `CachingFetcher`,
    `LocalSiteFetcher`)."""

    def fetch(self, url: str) -> FetchResult: ...


def normalize_url(url: str) -> str:
    """The URL without its #fragment, with a lower-case scheme and host and a path of at least '/'."""
    if not isinstance(url, str) or not url.strip():
        raise ToolError(f"url must be a non-empty string like 'https://example.org/page', got {url!r}")
    url = urldefrag(url.strip())[0]
    parts = urlsplit(url)
    if parts.scheme.lower() not in ("http", "https") or not parts.netloc:
        raise ToolError(
            f"cannot open {url!r}: only absolute http(s) URLs are supported, e.g. 'https://example.org/page'"
        )
    return urlunsplit((parts.scheme.lower(), parts.netloc.lower(), parts.path or "/", parts.query, ""))


# -- local -----------------------------------------------------------------------------------
class LocalSiteFetcher:
    """Serves pages from memory: a site with `.pages` ({url: html}) or the mapping itself."""

    def __init__(self, site: Any) -> None:
        pages = getattr(site, "pages", site)
        if not isinstance(pages, Mapping):
            raise ConfigError("LocalSiteFetcher needs a WorldSite or a {url: html} mapping")
        self.pages = {normalize_url(u): h for u, h in pages.items()}

    def fetch(self, url: str) -> FetchResult:
        key = normalize_url(url)
        html = self.pages.get(key)
        if html is None:
            return FetchResult(url, key, 404, "text/html; charset=utf-8", b"Not Found")
        return FetchResult(url, key, 200, "text/html; charset=utf-8", html.encode("utf-8"))


# -- HTTP ------------------------------------------------------------------------------------
def _refused(ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    mapped = getattr(ip, "ipv4_mapped", None)
    if mapped is not None:
        ip = mapped
    return not ip.is_global or ip.is_multicast


class HttpFetcher:
    """GET over HTTP(S) with a timeout, a size cap, a redirect limit and address refusals.

    allow_hosts: "host" or "host:port" entries exempt from the address check (tests allow-list
    their own "127.0.0.1:PORT"). rewrite: {origin: origin} sends requests for one origin to
    another and reports URLs in the first (a site served on loopback under its public name).
    """

    def __init__(
        self,
        *,
        allow_hosts: Iterable[str] = (),
        deny_private: bool = True,
        timeout_s: float = 10.0,
        max_bytes: int = 5_000_000,
        max_redirects: int = 3,
        rewrite: Mapping[str, str] | None = None,
        user_agent: str = "workbench-web/1 (+research; offline-replayable)",
    ) -> None:
        if timeout_s <= 0 or max_bytes <= 0 or max_redirects < 0:
            raise ConfigError("HttpFetcher needs timeout_s > 0, max_bytes > 0, max_redirects >= 0")
        self.allow_hosts = frozenset(
            h.lower().removeprefix("http://").removeprefix("https://").rstrip("/") for h in allow_hosts
        )
        self.deny_private = deny_private
        self.timeout_s, self.max_bytes, self.max_redirects = timeout_s, max_bytes, max_redirects
        self.rewrite = {k.rstrip("/").lower(): v.rstrip("/") for k, v in (rewrite or {}).items()}
        self._client = httpx.Client(
            timeout=httpx.Timeout(timeout_s),
            follow_redirects=False,
            headers={"User-Agent": user_agent},
            trust_env=False,
        )

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> HttpFetcher:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _target(self, url: str) -> tuple[str, str]:
        """(url to request, url to report) after the rewrite table."""
        for public, served in self.rewrite.items():
            if url.lower().startswith(public + "/") or url.lower() == public:
                return served + url[len(public) :], url
        return url, url

    def _pin(self, url: str) -> tuple[str, dict[str, str], dict[str, Any]]:
        """Check the address of `url`; return the URL to request (host pinned to a checked IP)."""
        parts = urlsplit(url)
        host = (parts.hostname or "").lower()
        port = parts.port or (443 if parts.scheme == "https" else 80)
        if host in self.allow_hosts or f"{host}:{port}" in self.allow_hosts:
            return url, {}, {}
        if not self.deny_private:
            return url, {}, {}
        if host in METADATA_HOSTS:
            raise ToolError(f"refused {url}: {host} is a cloud metadata endpoint")
        try:
            infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except (socket.gaierror, UnicodeError) as exc:
            raise ToolError(f"cannot open {url}: host {host!r} does not resolve ({exc})") from None
        ips = [ipaddress.ip_address(str(info[4][0]).split("%")[0]) for info in infos]
        bad = [str(ip) for ip in ips if _refused(ip)]
        if bad or not ips:
            raise ToolError(
                f"refused {url}: {host} resolves to a loopback/private/link-local/"
                f"metadata address ({', '.join(bad)}); only public addresses may be "
                "opened unless the host is in allow_hosts"
            )
        ip = str(ips[0])
        netloc = f"[{ip}]:{port}" if ":" in ip else f"{ip}:{port}"
        pinned = urlunsplit((parts.scheme, netloc, parts.path, parts.query, ""))
        return pinned, {"Host": parts.netloc}, {"sni_hostname": host}

    def fetch(self, url: str) -> FetchResult:
        start = time.monotonic()
        deadline = start + self.timeout_s
        current = normalize_url(url)
        seen: list[str] = []
        for _ in range(self.max_redirects + 1):
            seen.append(current)
            request_url, report_url = self._target(current)
            pinned, headers, ext = self._pin(request_url)
            status, ctype, body, location = self._get(pinned, headers, ext, current, deadline)
            if 300 <= status < 400 and location:
                nxt = normalize_url(urljoin(report_url, location))
                if nxt in seen:
                    raise ToolError(f"cannot open {url}: redirect loop ({' -> '.join([*seen, nxt])})")
                current = self._untarget(nxt)
                continue
            return FetchResult(url, report_url, status, ctype, body, time.monotonic() - start)
        raise ToolError(f"cannot open {url}: more than {self.max_redirects} redirects ({' -> '.join(seen)})")

    def _untarget(self, url: str) -> str:
        for public, served in self.rewrite.items():
            if url.lower().startswith(served.lower() + "/"):
                return public + url[len(served) :]
        return url

    def _get(
        self, url: str, headers: dict[str, str], ext: dict[str, Any], shown: str, deadline: float
    ) -> tuple[int, str, bytes, str | None]:
        try:
            request = self._client.build_request("GET", url, headers=headers, extensions=ext)
            response = self._client.send(request, stream=True)
            try:
                length = response.headers.get("content-length")
                if length and length.isdigit() and int(length) > self.max_bytes:
                    raise ToolError(
                        f"cannot open {shown}: the page is {int(length):,} bytes, over "
                        f"the {self.max_bytes:,}-byte limit (max_bytes)"
                    )
                chunks, size = [], 0
                for chunk in response.iter_bytes():
                    size += len(chunk)
                    if size > self.max_bytes:
                        raise ToolError(
                            f"cannot open {shown}: the page is over the {self.max_bytes:,}-byte limit (max_bytes)"
                        )
                    if time.monotonic() > deadline:
                        raise httpx.ReadTimeout("deadline")
                    chunks.append(chunk)
                return (
                    response.status_code,
                    response.headers.get("content-type", ""),
                    b"".join(chunks),
                    response.headers.get("location"),
                )
            finally:
                response.close()
        except httpx.TimeoutException:
            raise ToolError(
                f"cannot open {shown}: no complete answer within {self.timeout_s:g} s "
                "(timeout_s); the site is slow or down, try another source"
            ) from None
        except httpx.HTTPError as exc:
            raise ToolError(f"cannot open {shown}: {type(exc).__name__}: {exc}") from None


# -- cache -----------------------------------------------------------------------------------
_SCHEMA = """CREATE TABLE IF NOT EXISTS fetches (
  url TEXT PRIMARY KEY, final_url TEXT, status INTEGER, content_type TEXT, body BLOB,
  error TEXT, fetched_at REAL)"""


class CachingFetcher:
    """Records fetches in SQLite and replays them.

    mode="record": a hit comes from the cache, a miss goes to `inner` and is stored (errors too,
    so a replay fails the same way). mode="replay": only the cache; a miss is a ToolError.
    """

    def __init__(
        self, inner: Fetcher | None, sqlite_path: str | Path, mode: Literal["record", "replay"] = "record"
    ) -> None:
        if mode not in ("record", "replay"):
            raise ConfigError(f"mode={mode!r}: use 'record' or 'replay'")
        if mode == "record" and inner is None:
            raise ConfigError("CachingFetcher(mode='record') needs an inner fetcher to record from")
        self.inner, self.mode, self.path = inner, mode, Path(sqlite_path)
        if mode == "replay" and not self.path.is_file():
            raise ConfigError(f"{self.path} does not exist; record it first with mode='record'")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute(_SCHEMA)
        self._lock = threading.Lock()
        self.hits = self.misses = 0

    def close(self) -> None:
        self._db.close()

    def fetch(self, url: str) -> FetchResult:
        key = normalize_url(url)
        with self._lock:
            row = self._db.execute(
                "SELECT final_url, status, content_type, body, error FROM fetches WHERE url = ?", (key,)
            ).fetchone()
        if row is not None:
            self.hits += 1
            if row[4] is not None:
                raise ToolError(row[4])
            return FetchResult(url, row[0], row[1], row[2], bytes(row[3]))
        self.misses += 1
        if self.mode == "replay" or self.inner is None:
            raise ToolError(
                f"{key} is not in the web cache {self.path} (replay mode); record it "
                "first with CachingFetcher(..., mode='record')"
            )
        try:
            result = self.inner.fetch(key)
        except ToolError as exc:
            self._put(key, None, str(exc))
            raise
        self._put(key, result, None)
        return FetchResult(url, result.final_url, result.status, result.content_type, result.body, result.elapsed_s)

    def _put(self, key: str, r: FetchResult | None, error: str | None) -> None:
        with self._lock:
            self._db.execute(
                "INSERT OR REPLACE INTO fetches VALUES (?, ?, ?, ?, ?, ?, ?)",
                (key, r and r.final_url, r and r.status, r and r.content_type, r and r.body, error, time.time()),
            )

    def __len__(self) -> int:
        with self._lock:
            return self._db.execute("SELECT COUNT(*) FROM fetches").fetchone()[0]

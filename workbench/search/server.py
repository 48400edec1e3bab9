"""A Search-R1-compatible retrieval server (FastAPI), so Search-R1 / Dr. Zero / verl clients work.

    POST /retrieve  {"queries": ["q1", "q2"], "topk": 3, "return_scores": true}
      → {"result": [[{"document": {"id": "7", "contents": "\\"T\\"\\ntext"}, "score": 0.81}, ...], ...]}
      (without return_scores each element is the bare row {"id", "contents"})

    app = create_app(retriever, topk=3)                  # mount or serve yourself
    serve(retriever, host="127.0.0.1", port=8000)        # blocking (what `workbench serve-search` runs)
    with serve_in_thread(retriever) as url:              # tests and notebooks; port picked free
        RemoteRetriever(url).search("who built it")

Limits (`SearchLimits`, the `serve-search` flags): a body over 4 MiB gets 413; more than 4096 queries,
a query over 4096 characters or a bad field gets 422; a body that is not JSON gets 400; a path or method
it lacks gets 404/405. Each refusal is `{"detail": "what is wrong and the fix"}`. Invalid
UTF-8 and lone surrogates in queries become U+FFFD (`workbench.safetext`). Large batches run in
chunks of 32 queries and concurrent requests take turns chunk by chunk, so a small request is
never stuck behind a large one. SIGTERM stops the server within about a second even mid-request.
"""

import asyncio
import contextlib
import queue
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from workbench.errors import ConfigError, RetrievalError
from workbench.safetext import safe_json
from workbench.search.hits import Retriever

_SEARCH_R1_BODY = '{"queries": ["..."], "topk": 3, "return_scores": true}'  # what Search-R1's client posts


@dataclass(frozen=True)
class SearchLimits:
    """What one `/retrieve` request may ask for. Over a limit: 413 (body) or 422 (queries), with a
    message naming the limit. `chunk` queries run at a time; requests take turns chunk by chunk."""

    max_body_bytes: int = 4 << 20
    max_queries: int = 4096
    max_query_chars: int = 4096
    chunk: int = 32

    def __post_init__(self) -> None:
        for name in ("max_body_bytes", "max_queries", "max_query_chars", "chunk"):
            if getattr(self, name) < 1:
                raise ConfigError(f"{name} must be >= 1, got {getattr(self, name)}")


class FairWorker:
    """One daemon thread that runs every retrieval (faiss/torch are not re-entrant here and the CPU
    is the bottleneck anyway), jobs in arrival order. A request queues its next chunk only when the
    previous one is done, so concurrent requests take turns: a small request waits for at most one
    chunk of each request ahead of it, never for a whole large batch. Daemon, so a process that
    is told to stop never waits for a retrieval in flight."""

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._start_lock = threading.Lock()

    async def run(self, fn: Callable[..., Any], *args: Any) -> Any:
        loop = asyncio.get_running_loop()
        future = loop.create_future()
        with self._start_lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._work, daemon=True, name="search-worker")
                self._thread.start()
        self._jobs.put((fn, args, loop, future))
        return await future

    def close(self) -> None:
        if self._thread is not None:
            self._jobs.put(None)
            self._thread.join(timeout=5)

    def _work(self) -> None:
        while (job := self._jobs.get()) is not None:
            fn, args, loop, future = job
            if future.cancelled():  # its request is gone (client left, server stopping)
                continue
            try:
                outcome, ok = fn(*args), True
            except Exception as exc:
                outcome, ok = exc, False
            with contextlib.suppress(RuntimeError):  # the loop may be closed by now
                loop.call_soon_threadsafe(_settle, future, outcome, ok)


def _settle(future: asyncio.Future, outcome: Any, ok: bool) -> None:
    if not future.done():
        future.set_result(outcome) if ok else future.set_exception(outcome)


def _check_queries(queries: list, lim: SearchLimits) -> None:
    """A 422 naming the limit (and the server flag that raises it) for too many or too long queries."""
    from workbench.webio import BadRequest

    if len(queries) > lim.max_queries:
        raise BadRequest(
            f"{len(queries)} queries in one request; the limit is {lim.max_queries}: split the "
            "batch into several requests (or restart the server with a larger --max-queries)",
            422,
        )
    for i, q in enumerate(queries):
        if len(q) > lim.max_query_chars:
            raise BadRequest(
                f"query {i} has {len(q)} characters; the limit is {lim.max_query_chars}: shorten it "
                "(or restart the server with a larger --max-query-chars)",
                422,
            )


def _result_rows(results: list, scores: bool) -> list:
    """Search-R1's reply rows: each hit's row, or {document, score} with scores (safe_json: a corpus row
    with a lone surrogate must not fail the reply)."""
    if scores:
        return [[{"document": safe_json(h.to_row()), "score": h.score} for h in hits] for hits in results]
    return [[safe_json(h.to_row()) for h in hits] for hits in results]


def create_app(
    retriever: Retriever, *, topk: int = 3, max_topk: int = 100, limits: SearchLimits | None = None, pages: Any = None
) -> Any:
    """The FastAPI app serving `retriever`, with `limits` (see `SearchLimits`) on every request.
    `app.state.worker.close()` stops its retrieval thread (`serve_in_thread` does). With `pages`
    (a `workbench.web.PageStore`) it also answers ASearcher's `POST /access`."""
    # (No `from __future__ import annotations` in this module: FastAPI must see the real
    # request class, which is local so that importing this module stays cheap.)
    from fastapi import FastAPI, Request
    from fastapi.responses import JSONResponse
    from pydantic import BaseModel, ValidationError

    from workbench.webio import BadRequest, BodyLimit, name_routes, parse_json, validation_message

    lim = limits or SearchLimits()

    class RetrieveRequest(BaseModel):
        queries: list[str]
        topk: int | None = None
        return_scores: bool = False

    app = FastAPI(title="workbench retrieval", description="Search-R1-compatible /retrieve")
    app.add_middleware(BodyLimit, max_bytes=lim.max_body_bytes)
    worker = app.state.worker = FairWorker()

    def check(raw: bytes) -> tuple[list[str], int, bool]:
        try:
            req = RetrieveRequest.model_validate(parse_json(raw))
        except ValidationError as exc:
            raise BadRequest(f"{validation_message(exc)} (send {_SEARCH_R1_BODY})", 422) from None
        k = req.topk or topk
        if not 1 <= k <= max_topk:
            raise BadRequest(f"topk must be between 1 and {max_topk}, got {k} (0 or none: this server's {topk})", 422)
        _check_queries(req.queries, lim)
        return list(req.queries), k, req.return_scores

    @app.post("/retrieve")
    async def retrieve(request: Request) -> Any:
        try:
            queries, k, scores = check(await request.body())
        except BadRequest as exc:
            return JSONResponse(status_code=exc.status, content={"detail": str(exc)})
        results: list = []
        for at in range(0, len(queries), lim.chunk):
            if at and await request.is_disconnected():
                return JSONResponse(status_code=499, content={"detail": "client closed the request"})
            results += await worker.run(retriever.retrieve, queries[at : at + lim.chunk], k)
        return {"result": _result_rows(results, scores)}

    if pages is not None:
        from workbench.web.pages import add_access_route

        add_access_route(app, pages)

    @app.get("/health")
    def health() -> dict[str, Any]:
        return {"status": "ok", "retriever": repr(retriever)}

    name_routes(app, f"POST /retrieve ({_SEARCH_R1_BODY}){', POST /access' if pages else ''} and GET /health")
    return app


def serve(
    retriever: Retriever,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    topk: int = 3,
    limits: SearchLimits | None = None,
    shutdown_grace: float = 1.0,
    pages: Any = None,
) -> None:
    """Serve until interrupted (Ctrl-C or SIGTERM). Requests still running `shutdown_grace`
    seconds after the signal are cancelled, so the process exits promptly even when busy."""
    import uvicorn

    uvicorn.run(
        create_app(retriever, topk=topk, limits=limits, pages=pages),
        host=host,
        port=port,
        log_level="warning",
        access_log=False,
        # uvicorn annotates int, but awaits it as an asyncio timeout: fractions of a second work
        timeout_graceful_shutdown=shutdown_grace,  # type: ignore[arg-type]
    )


@contextlib.contextmanager
def serve_in_thread(
    retriever: Retriever,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    topk: int = 3,
    limits: SearchLimits | None = None,
    start_timeout: float = 30.0,
    pages: Any = None,
) -> Iterator[str]:
    """Run the server on a background thread; yields its base URL and stops it on exit."""
    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise RetrievalError(f"cannot bind {host}:{port} ({exc}); pick another port or port=0 for a free one") from None
    bound_port = sock.getsockname()[1]
    app = create_app(retriever, topk=topk, limits=limits, pages=pages)
    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off", timeout_graceful_shutdown=1)
    server = uvicorn.Server(config)
    thread = threading.Thread(
        target=server.run, kwargs={"sockets": [sock]}, daemon=True, name=f"search-server-{bound_port}"
    )
    thread.start()
    deadline = time.monotonic() + start_timeout
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            sock.close()
            raise RetrievalError(f"the search server did not start on {host}:{bound_port}")
        time.sleep(0.02)
    try:
        yield f"http://{host}:{bound_port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()
        app.state.worker.close()


__all__ = ["FairWorker", "SearchLimits", "create_app", "serve", "serve_in_thread"]

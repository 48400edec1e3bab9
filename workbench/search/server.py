"""A Search-R1-compatible retrieval server (FastAPI), so Search-R1 / Dr. Zero / verl clients work.

    POST /retrieve  {"queries": ["q1", "q2"], "topk": 3, "return_scores": true}
      → {"result": [[{"document": {"id": "7", "contents": "\\"T\\"\\ntext"}, "score": 0.81}, ...], ...]}
      (without return_scores each element is the bare row {"id", "contents"})

    app = create_app(retriever, topk=3)                  # mount or serve yourself
    serve(retriever, host="127.0.0.1", port=8000)        # blocking (what `workbench serve-search` runs)
    with serve_in_thread(retriever) as url:              # tests and notebooks; port picked free
        RemoteRetriever(url).search("who built it")
"""


import contextlib
import socket
import threading
import time
from typing import Any, Iterator

from workbench.errors import RetrievalError
from workbench.search.hits import Retriever


def create_app(retriever: Retriever, *, topk: int = 3, max_topk: int = 100) -> Any:
    """The FastAPI app serving `retriever`. Calls are serialised (faiss/torch are not re-entrant
    here and the CPU is the bottleneck anyway); batch queries in one request for throughput."""
    # (No `from __future__ import annotations` in this module: FastAPI must see the real
    # request class, which is local so that importing this module stays cheap.)
    from fastapi import FastAPI, HTTPException
    from pydantic import BaseModel

    class RetrieveRequest(BaseModel):
        queries: list[str]
        topk: int | None = None
        return_scores: bool = False

    app = FastAPI(title="workbench retrieval", description="Search-R1-compatible /retrieve")
    lock = threading.Lock()

    @app.post("/retrieve")
    def retrieve(req: RetrieveRequest) -> dict[str, Any]:
        k = req.topk or topk
        if not 1 <= k <= max_topk:
            raise HTTPException(status_code=422, detail=f"topk must be between 1 and {max_topk}")
        with lock:
            results = retriever.retrieve(list(req.queries), top_k=k)
        if req.return_scores:
            return {"result": [[{"document": h.to_row(), "score": h.score} for h in hits] for hits in results]}
        return {"result": [[h.to_row() for h in hits] for hits in results]}

    @app.get("/health")
    def health() -> dict[str, Any]:
        return {"status": "ok", "retriever": repr(retriever)}

    return app


def serve(retriever: Retriever, *, host: str = "127.0.0.1", port: int = 8000, topk: int = 3) -> None:
    """Serve until interrupted (Ctrl-C)."""
    import uvicorn

    uvicorn.run(create_app(retriever, topk=topk), host=host, port=port, log_level="warning",
                access_log=False)


@contextlib.contextmanager
def serve_in_thread(retriever: Retriever, *, host: str = "127.0.0.1", port: int = 0, topk: int = 3,
                    start_timeout: float = 30.0) -> Iterator[str]:
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
    config = uvicorn.Config(create_app(retriever, topk=topk), log_level="warning", access_log=False,
                            lifespan="off")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True,
                              name=f"search-server-{bound_port}")
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

"""Request bodies for workbench's HTTP servers (`serve-search`, `serve-model`).

Whatever bytes a client sends, the answer is a reply, never a crash or a 500:

- `BodyLimit` (ASGI middleware) reads at most `max_bytes` of a request body; a larger body gets
  413 before the app sees it (a `Content-Length` over the limit is refused without reading).
- `parse_json(raw)` decodes with the safetext rule (invalid UTF-8 and lone surrogates, ``\\ud800``
  escapes included, become U+FFFD) and raises `BadRequest` (400) for what is not JSON or nests
  too deeply to parse.
- `validation_message(exc)` turns a pydantic `ValidationError` into one line naming each field,
  without echoing the (possibly huge) input.
- `name_routes(app, served)` answers a path or method the app lacks with a message naming what it
  serves, instead of a bare "Not Found" that a client (the `openai` package) shows as "Error code: 404".
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from workbench.errors import ConfigError
from workbench.safetext import safe_bytes, safe_json, safe_text

if TYPE_CHECKING:
    from fastapi import FastAPI
    from pydantic import ValidationError
    from starlette.exceptions import HTTPException
    from starlette.requests import Request
    from starlette.responses import Response

__all__ = ["BadRequest", "BodyLimit", "name_routes", "parse_json", "validation_message"]


class BadRequest(ConfigError):
    """A request the server refuses; `status` is the HTTP status to answer with."""

    def __init__(self, message: str, status: int = 400):
        super().__init__(message)
        self.status = status


def parse_json(raw: bytes) -> Any:
    """The JSON value in `raw`, every string made valid Unicode. Raises `BadRequest`."""
    try:
        value = json.loads(safe_bytes(raw))
    except ValueError as exc:  # JSONDecodeError is a ValueError; so is a 5,000-digit integer
        raise BadRequest(f"the body is not valid JSON ({str(exc)[:200]}); send a JSON object") from None
    except RecursionError:
        raise BadRequest("the JSON body nests too deeply; send a flat request object") from None
    try:
        return safe_json(value)
    except RecursionError:
        raise BadRequest("the JSON body nests too deeply; send a flat request object") from None


def validation_message(exc: ValidationError, root: str = "body") -> str:
    """One line for a pydantic `ValidationError`: 'field: problem; other: problem' (`root`: a problem with
    the whole value). JSON-safe whatever was sent: valid Unicode, field names cut at 100 characters."""
    parts = []
    for err in exc.errors(include_input=False, include_url=False)[:10]:
        loc = ".".join(str(x) for x in err.get("loc", ()))[:100] or root
        if err.get("type") == "extra_forbidden":
            parts.append(f"{loc}: this field is not supported here; remove it")
        else:
            parts.append(f"{loc}: {err.get('msg', 'invalid')}")
    return safe_text("; ".join(parts)) or "invalid request"


def name_routes(app: FastAPI, served: str, make_body: Callable[[str, int], dict[str, Any]] | None = None) -> None:
    """Answer a request for a path or method `app` (FastAPI) lacks with "POST /x is not served here; this
    server serves {served}", shaped by `make_body(message, status)` (FastAPI's {"detail": ...} by default)."""
    from fastapi.exception_handlers import http_exception_handler
    from starlette.exceptions import HTTPException as RouterError
    from starlette.responses import JSONResponse

    shape = make_body or (lambda message, status: {"detail": message})
    routing = {404: "Not Found", 405: "Method Not Allowed"}  # the router's own answers

    async def named(request: Request, exc: HTTPException) -> Response:
        if exc.detail != routing.get(exc.status_code):  # a route's own HTTPException, or another status
            return await http_exception_handler(request, exc)
        message = (
            f"{request.method} {safe_text(request.url.path)[:200]} is not served here; this server serves {served}"
        )
        return JSONResponse(shape(message, exc.status_code), status_code=exc.status_code, headers=exc.headers)

    app.add_exception_handler(RouterError, named)  # type: ignore[arg-type]  # starlette types handlers loosely


class BodyLimit:
    """ASGI middleware: refuse HTTP request bodies over `max_bytes` with 413 and a JSON message.

    The body is read here (up to the limit) and replayed to the app, so no handler ever sees more.
    `make_body(message) -> dict` shapes the JSON error (FastAPI's {"detail": ...} by default).
    """

    def __init__(self, app: Any, max_bytes: int, make_body: Any = None):
        if max_bytes < 1:
            raise ConfigError(f"max body size must be >= 1 byte, got {max_bytes}")
        self.app = app
        self.max_bytes = max_bytes
        self.make_body = make_body or (lambda message: {"detail": message})

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_bytes:
            await self._refuse(send, int(declared))
            return
        chunks, size, more = [], 0, True
        while more:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_bytes:
                await self._refuse(send, None)
                return
            chunks.append(chunk)
            more = message.get("more_body", False)
        body, replayed = b"".join(chunks), False

        async def replay() -> dict:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)

    async def _refuse(self, send: Any, declared: int | None) -> None:
        size = f"{declared} bytes" if declared is not None else "more"
        message = (
            f"request body too large ({size}; the limit is {self.max_bytes} bytes): split the request "
            "into smaller ones, or restart the server with a larger --max-body-bytes"
        )
        payload = json.dumps(self.make_body(message)).encode()
        headers = [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(payload)).encode()),
            (b"connection", b"close"),
        ]
        await send({"type": "http.response.start", "status": 413, "headers": headers})
        await send({"type": "http.response.body", "body": payload})

"""Serve NB-Agent with OpenEnv's own server (`openenv.core.env_server`), and talk to it with OpenEnv's client.

    with EnvServer(EpisodeHost(tools=registry, reward="em", max_sessions=4), port=0) as server:
        with NBAgentClient(server.url).sync() as client:          # OpenEnv's EnvClient, over a WebSocket
            client.reset(question="What is 6 * 7?", answer="42")
            result = client.step(NBAgentAction(code="submit_final_answer(str(6 * 7))"))
            result.done, result.reward                            # True, 1.0

Each WebSocket client gets its own `NBAgentEnvironment` (its own kernel, up to `max_sessions` at once);
the HTTP `/reset` and `/step` routes build a throwaway one per request, as OpenEnv does. `workbench
serve-env` runs the same server in the foreground.

A refusal reaches the client in words that name the problem and the fix, and the session serves on: an
invalid action is OpenEnv's `VALIDATION_ERROR` (WebSocket; its message carries the reasons) or a 422 whose
`detail` holds them (HTTP); a workbench error (no episode yet, a bad reset) is its message, over HTTP a 400.
"""

from __future__ import annotations

import functools
import json
import socket
import threading
import time
from typing import TYPE_CHECKING, Any

from openenv.core.client_types import StepResult
from openenv.core.env_client import EnvClient
from openenv.core.env_server.http_server import create_fastapi_app
from pydantic import ConfigDict, ValidationError
from pydantic_core import PydanticCustomError

from workbench.envs.openenv import NBAgentAction, NBAgentEnvironment, NBAgentObservation, NBAgentState
from workbench.envs.session import EpisodeHost
from workbench.errors import ConfigError, WorkbenchError
from workbench.safetext import safe_text
from workbench.webio import validation_message

if TYPE_CHECKING:
    import uvicorn
    from fastapi import FastAPI, Request
    from fastapi.responses import JSONResponse

LOOPBACK = ("127.0.0.1", "::1", "localhost")


def build_env_app(host: EpisodeHost) -> FastAPI:
    """OpenEnv's FastAPI app over `NBAgentEnvironment`s sharing `host` (`/ws`, `/reset`, `/step`, `/state`…)."""
    factory = functools.partial(NBAgentEnvironment, host)
    app: FastAPI = create_fastapi_app(factory, _WireAction, NBAgentObservation, max_concurrent_envs=host.max_sessions)
    app.add_exception_handler(WorkbenchError, _refused)
    app.add_middleware(_NamedRefusals)
    return app


class _WireAction(NBAgentAction):
    """`NBAgentAction` as the server reads it off the wire. A refusal is one error whose message names each
    problem (`validation_message`) and holds neither the input nor an exception object, so OpenEnv's server
    can send it as JSON whatever the client sent (a megabyte of code, lone surrogates, odd field names)."""

    model_config = ConfigDict(title="NBAgentAction")

    @classmethod
    def model_validate(cls, obj: Any, **kwargs: Any) -> NBAgentAction:
        try:
            action: NBAgentAction = super().model_validate(obj, **kwargs)
        except ValidationError as exc:
            reason = PydanticCustomError("invalid_action", validation_message(exc, root="action"))
            line = {"type": reason, "loc": (), "input": None}
            raise ValidationError.from_exception_data("NBAgentAction", [line]) from None  # type: ignore[list-item]
        return action


async def _refused(request: Request, exc: Exception) -> JSONResponse:
    """An HTTP route's workbench error as JSON `{"detail": message}`: 400 for a bad request, else 500."""
    from fastapi.responses import JSONResponse

    status = 400 if isinstance(exc, ConfigError) else 500
    return JSONResponse({"detail": safe_text(str(exc))}, status_code=status)


class _NamedRefusals:
    """OpenEnv 0.3's WebSocket route answers a message that fails validation with the words "Invalid
    message" and the pydantic errors beside them, and its clients show only the words. This ASGI layer adds
    each error's own message to them, so the client shows what was wrong and the fix."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope.get("type") != "websocket":
            await self.app(scope, receive, send)
            return

        async def send_named(message: Any) -> None:
            text = message.get("text")
            if message.get("type") == "websocket.send" and isinstance(text, str) and text.startswith('{"type":"error"'):
                message = {**message, "text": _with_reasons(text)}
            await send(message)

        await self.app(scope, receive, send_named)


def _with_reasons(frame: str) -> str:
    """An OpenEnv error frame whose VALIDATION_ERROR message also says each error's loc and msg."""
    reply = json.loads(frame)
    data = reply.get("data") or {}
    errors = data.get("errors") or []
    if data.get("code") != "VALIDATION_ERROR" or not errors:
        return frame
    reasons = []
    for error in errors[:10]:
        loc = ".".join(str(part) for part in error.get("loc") or ())
        reasons.append(f"{loc}: {error.get('msg')}" if loc else str(error.get("msg")))
    data["message"] = f"{data.get('message') or 'Invalid message'}: {'; '.join(reasons)}"
    return json.dumps(reply)


class EnvServer:
    """The app on `address:port` in a background thread (`port=0`: a free one; see `url`). Only
    loopback unless `public=True`: an environment runs whatever code its clients send."""

    def __init__(self, host: EpisodeHost, *, address: str = "127.0.0.1", port: int = 0, public: bool = False) -> None:
        if address not in LOOPBACK and not public:
            raise ConfigError(
                f"serving on {address} lets anyone there run code in your sandboxes; "
                "use 127.0.0.1, or pass public=True (--public) when that is what you want"
            )
        self.host = host
        self._sock = socket.socket(socket.AF_INET6 if ":" in address else socket.AF_INET)
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock.bind((address, port))
        self.port = self._sock.getsockname()[1]
        self.url = f"http://{address}:{self.port}"
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None

    def start(self, timeout: float = 30.0) -> EnvServer:
        import uvicorn

        app = _QuietClientClose(build_env_app(self.host))
        config = uvicorn.Config(app, log_level="warning", timeout_graceful_shutdown=2)
        self._server = server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=server.run, kwargs={"sockets": [self._sock]}, daemon=True, name="workbench-serve-env"
        )
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise ConfigError(f"the environment server did not start on {self.url}; see the log above")
            time.sleep(0.02)
        return self

    def serve_forever(self) -> None:
        """Serve (starting first if needed) until interrupted, then `stop()` (the `workbench serve-env` command)."""
        if self._thread is None:
            self.start()
        try:
            while self._thread is not None and self._thread.is_alive():
                self._thread.join(0.5)
        finally:
            self.stop()

    def stop(self) -> None:
        """Stop serving, end every session (their kernels go back) and close the host's pool."""
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=15)
        self._sock.close()
        self.host.close()

    def __enter__(self) -> EnvServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class _QuietClientClose:
    """OpenEnv 0.3's WebSocket route closes the socket after a client's "close" message and catches only
    `RuntimeError` when the client has already gone; starlette raises `WebSocketDisconnect` there, which
    uvicorn logs as an application error at every normal client close. The session is already cleaned
    up by then (its `finally`), so that one exception is dropped here."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        from starlette.websockets import WebSocketDisconnect

        try:
            await self.app(scope, receive, send)
        except WebSocketDisconnect:
            if scope.get("type") != "websocket":
                raise


class NBAgentClient(EnvClient[NBAgentAction, NBAgentObservation, NBAgentState]):  # type: ignore[misc]  # openenv: untyped
    """OpenEnv's `EnvClient` for a served NB-Agent (async; `.sync()` for the blocking twin)."""

    def _step_payload(self, action: NBAgentAction) -> dict[str, Any]:
        payload: dict[str, Any] = action.model_dump(exclude_none=True, exclude={"metadata"})
        return payload

    def _parse_result(self, payload: dict[str, Any]) -> StepResult[NBAgentObservation]:
        observation = NBAgentObservation(
            **payload.get("observation", {}), done=payload.get("done", False), reward=payload.get("reward")
        )
        return StepResult(observation=observation, reward=payload.get("reward"), done=payload.get("done", False))

    def _parse_state(self, payload: dict[str, Any]) -> NBAgentState:
        return NBAgentState(**payload)


__all__ = ["EnvServer", "NBAgentClient", "build_env_app"]

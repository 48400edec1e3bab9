"""Serve NB-Agent with OpenEnv's own server (`openenv.core.env_server`), and talk to it with OpenEnv's client.

    with EnvServer(EpisodeHost(tools=registry, reward="em", max_sessions=4), port=0) as server:
        with NBAgentClient(server.url).sync() as client:          # OpenEnv's EnvClient, over a WebSocket
            client.reset(question="What is 6 * 7?", answer="42")
            result = client.step(NBAgentAction(code="submit_final_answer(str(6 * 7))"))
            result.done, result.reward                            # True, 1.0

Each WebSocket client gets its own `NBAgentEnvironment` (its own kernel, up to `max_sessions` at once);
the HTTP `/reset` and `/step` routes build a throwaway one per request, as OpenEnv does. `workbench
serve-env` runs the same server in the foreground.
"""

from __future__ import annotations

import functools
import socket
import threading
import time
from typing import TYPE_CHECKING, Any

from openenv.core.client_types import StepResult
from openenv.core.env_client import EnvClient
from openenv.core.env_server.http_server import create_fastapi_app

from workbench.envs.openenv import NBAgentAction, NBAgentEnvironment, NBAgentObservation, NBAgentState
from workbench.envs.session import EpisodeHost
from workbench.errors import ConfigError

if TYPE_CHECKING:
    import uvicorn
    from fastapi import FastAPI

LOOPBACK = ("127.0.0.1", "::1", "localhost")


def build_env_app(host: EpisodeHost) -> FastAPI:
    """OpenEnv's FastAPI app over `NBAgentEnvironment`s sharing `host` (`/ws`, `/reset`, `/step`, `/state`…)."""
    factory = functools.partial(NBAgentEnvironment, host)
    app: FastAPI = create_fastapi_app(factory, NBAgentAction, NBAgentObservation, max_concurrent_envs=host.max_sessions)
    return app


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

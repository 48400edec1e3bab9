"""`ModelGateway`: an OpenAI-compatible server on loopback in front of a workbench policy, recording
every call of every rollout token-faithfully; `Rollout`: one episode a harness plays through it.

    with ModelGateway(policy, store="runs/mine") as gw:        # a background thread, a free port
        with gw.rollout("What is 2+2?") as r:                   # r.base_url = .../rollouts/{id}/v1
            reply = r.sync_client.chat.completions.create(model="any", messages=[...])
            r.finish(reply.choices[0].message.content)
        gw.trajectory(r.id).segments()                          # prompt ids, sampled ids, mask

A harness in another process gets `r.env` (`OPENAI_BASE_URL`, `OPENAI_API_KEY`); over HTTP,
`POST /rollouts` with `gw.admin_key` opens one (see `workbench.gateway.server`).
"""

from __future__ import annotations

import os
import socket
import threading
import time
import traceback
from pathlib import Path
from typing import TYPE_CHECKING, Any

from workbench.errors import ConfigError, PolicyError
from workbench.gateway.calllog import CALL_LOG_NAME, CallLog
from workbench.gateway.config import GatewayConfig
from workbench.gateway.scoring import resolve_scorer
from workbench.gateway.server import GatewayService, build_gateway_app
from workbench.policies.base import Policy
from workbench.trajectory import Task, Trajectory

if TYPE_CHECKING:
    import openai
    import uvicorn

    from workbench.contracts import Scorer, TrajectoryStore
    from workbench.gateway.state import RolloutState
    from workbench.kernel import Kernel

__all__ = ["ModelGateway", "Rollout"]


def _task(task: Task | str | dict[str, Any]) -> Task:
    if isinstance(task, Task):
        return task
    if isinstance(task, str):
        return Task.from_dict({"question": task})
    if isinstance(task, dict):
        return Task.from_dict(task)
    raise ConfigError(
        f"a rollout's task is a Task, a question string or a dict with 'question'; got {type(task).__name__}"
    )


class ModelGateway:
    """Serve `policy` to harnesses, one URL and key per rollout; every call recorded to `store`.

    `store`: a `Store`, a run directory (a `Store` is opened there) or None (trajectories kept in
    memory only: `gw.trajectory(id)`). `reward` (a preset, component name, spec file or object with
    `.score`) scores each rollout's answer when it finishes. `port=0` picks a free port.

    Each call is durable before its reply: with a `Store` (its run directory), as one row of deltas in
    `RUN_DIR/gateway_calls.sqlite` (`CallLog`), the whole trajectory written to the store when the
    rollout opens and ends; with any other store (or `call_log=False`), the whole trajectory per call."""

    def __init__(
        self,
        policy: Policy,
        *,
        store: TrajectoryStore | str | Path | None = None,
        config: GatewayConfig | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        run_id: str = "",
        reward: Scorer | str | None = None,
        call_log: bool = True,
    ) -> None:
        if host not in ("127.0.0.1", "localhost", "::1"):
            raise ConfigError(f"the model gateway listens on loopback only (got host {host!r}): use 127.0.0.1")
        if isinstance(store, (str, Path)):
            from workbench.store import Store

            store = Store(store)
        run_dir = getattr(store, "run_dir", None)
        log = CallLog(Path(run_dir) / CALL_LOG_NAME) if call_log and isinstance(run_dir, Path) else None
        scorer = resolve_scorer(reward)
        self.service = GatewayService(policy, config or GatewayConfig(), store, run_id, scorer, log)
        self.policy = policy
        self._sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock.bind((host, port))
        self.port = self._sock.getsockname()[1]
        self.url = f"http://{host}:{self.port}"
        self.service.url = self.url
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self._stopping = threading.Event()

    @property
    def admin_key(self) -> str:
        return self.service.admin_key

    @property
    def tool_protocol(self) -> str:
        """How tools reach the model: "native" (the template renders them) or "text" (workbench's protocol)."""
        return self.service.renderer.tool_protocol

    def start(self, timeout: float = 30.0) -> ModelGateway:
        import uvicorn

        config = uvicorn.Config(
            build_gateway_app(self.service), log_level="warning", lifespan="off", timeout_graceful_shutdown=2
        )
        self._server = server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=server.run, kwargs={"sockets": [self._sock]}, daemon=True, name="workbench-model-gateway"
        )
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise PolicyError(f"the model gateway did not start on {self.url}; see the log above")
            time.sleep(0.02)
        limit = self.service.config.rollout_limit_s
        if limit is not None:
            watch = threading.Thread(
                target=self._watch, args=(min(1.0, limit / 4),), daemon=True, name="gateway-limits"
            )
            watch.start()
        return self

    def _watch(self, every: float) -> None:
        """Ends rollouts that run past their limit, also when their harness never calls again."""
        while not self._stopping.wait(every):
            self.service.expire()

    @property
    def call_log(self) -> CallLog | None:
        """Where calls are logged as they happen (None when each call writes its whole trajectory)."""
        return self.service.call_log

    def stop(self) -> None:
        self._stopping.set()
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=10)
        self._sock.close()
        if self.service.call_log is not None:
            self.service.call_log.close()

    def __enter__(self) -> ModelGateway:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def rollout(self, task: Task | str | dict[str, Any], *, policy: Policy | None = None) -> Rollout:
        """Open a rollout of `task`: its own URL and key; finish it with `r.finish(answer)` or by leaving `with`.
        `policy`: the rollout samples from it instead of the gateway's (same tokenizer; a trainer's wave policy)."""
        return Rollout(self, self.service.open(_task(task), policy))

    def trajectory(self, rollout_id: str) -> Trajectory:
        """The rollout's trajectory as recorded so far (a copy)."""
        state = self.service.rollouts.get(rollout_id)
        if state is None:
            raise ConfigError(f"no rollout {rollout_id!r} on this gateway")
        with state.lock:
            return state.snapshot()


class Rollout:
    """One episode a harness plays through the gateway. A context manager: leaving it finishes the
    rollout (as `error`, with the traceback, when the block raised)."""

    def __init__(self, gateway: ModelGateway, state: RolloutState) -> None:
        self.gateway, self._state = gateway, state
        self.id, self.api_key, self.task = state.id, state.key, state.trajectory.task
        self.base_url = f"{gateway.url}/rollouts/{state.id}/v1"
        self._client: openai.AsyncOpenAI | None = None
        self._sync_client: openai.OpenAI | None = None
        self._kernel: Kernel | None = None

    @property
    def env(self) -> dict[str, str]:
        """Environment variables for a harness in a subprocess: `{**os.environ, **r.env}`."""
        return {"OPENAI_BASE_URL": self.base_url, "OPENAI_API_KEY": self.api_key}

    @property
    def client(self) -> openai.AsyncOpenAI:
        """An `openai.AsyncOpenAI` bound to this rollout. It keeps no idle connection, so it works from any
        event loop (each `asyncio.run` in a notebook cell is a new one) and leaks nothing when a loop ends."""
        if self._client is None:
            import httpx2  # openai's HTTP client library (a dependency of the pinned openai)
            import openai

            http = openai.DefaultAsyncHttpxClient(limits=httpx2.Limits(max_keepalive_connections=0))
            self._client = openai.AsyncOpenAI(base_url=self.base_url, api_key=self.api_key, http_client=http)
        return self._client

    @property
    def sync_client(self) -> openai.OpenAI:
        """An `openai.OpenAI` bound to this rollout."""
        if self._sync_client is None:
            import openai

            self._sync_client = openai.OpenAI(base_url=self.base_url, api_key=self.api_key)
        return self._sync_client

    def kernel(self, **options: Any) -> Kernel:
        """The rollout's own sandboxed kernel (started on first use, shut down when the rollout ends)."""
        if self._kernel is None:
            from workbench.kernel import Kernel

            self._kernel = Kernel(**options)
            self._kernel.start()
        return self._kernel

    @property
    def status(self) -> str:
        return self._state.status

    @property
    def trajectory(self) -> Trajectory:
        return self.gateway.trajectory(self.id)

    def finish(self, answer: Any = None, *, error: str | None = None) -> Trajectory:
        """End the rollout with the harness's answer (or an error); later calls get 404."""
        if self._state.status == "open":
            self.gateway.service.finish(self.id, None if answer is None else str(answer), error)
        self._close()
        return self.trajectory

    def reward(self, value: float, *, source: str = "harness", reason: str = "", **components: float) -> None:
        """Record the harness's own reward for this rollout (before or after it finishes), with provenance."""
        from workbench.gateway.scoring import harness_rewards

        body = {"value": value, "components": components, "source": source, "reason": reason}
        rewards, provenance = harness_rewards(body)
        self.gateway.service.record_rewards(self._state, rewards, "harness", None, provenance)

    async def aclose(self) -> None:
        """Close the async client (from the loop that used it)."""
        if self._client is not None:
            await self._client.close()
            self._client = None

    def _close(self) -> None:
        for client in (self._sync_client,):
            if client is not None:
                client.close()
        if self._kernel is not None:
            self._kernel.close()
            self._kernel = None

    def __enter__(self) -> Rollout:
        return self

    def __exit__(self, kind: object, exc: BaseException | None, tb: object) -> None:
        if self._state.status == "open":
            error = "".join(traceback.format_exception(exc)) if exc is not None else None
            self.finish(error=error)
        else:
            self._close()


def harness_env(rollout: Rollout) -> dict[str, str]:
    """The process environment a subprocess harness runs with."""
    return {**os.environ, **rollout.env}

"""The model gateway's HTTP app (FastAPI + uvicorn, as `serve-model`).

Per rollout, under `/rollouts/{id}/v1` with the rollout's bearer key: `POST chat/completions`,
`POST completions`, `GET models`. With the admin key: `POST /rollouts` (body {"task": {...}})
opens one and answers {"id", "base_url", "api_key"}; `POST /rollouts/{id}/finish` (body
{"answer": ...}; the rollout's own key works too) closes it (the gateway's reward spec scores it);
`POST /rollouts/{id}/reward` ({"value": 1.0, "components": {...}, "source": ...}) records the
harness's own reward; `GET /rollouts/{id}` shows it.
An unknown or finished rollout is 404, another rollout's key 403, no key 401; every error is
OpenAI's shape. Each call is written to the store before its reply is sent.
"""

from __future__ import annotations

import asyncio
import hashlib
import secrets
import threading
import time
from typing import TYPE_CHECKING, Any

from workbench.errors import ConfigError
from workbench.gateway.calllog import CallLog
from workbench.gateway.chat import CallAnswer, serve_chat, serve_completion
from workbench.gateway.config import AUXILIARY_HEADER, GatewayConfig
from workbench.gateway.render import ChatRenderer
from workbench.gateway.scoring import harness_rewards, score_rollout
from workbench.gateway.state import RolloutState
from workbench.gateway.stream import chat_events, completion_events
from workbench.gateway.wire import RequestRefused, error_body
from workbench.policies.base import Policy
from workbench.trajectory import Task
from workbench.webio import BadRequest, BodyLimit

if TYPE_CHECKING:
    from fastapi import FastAPI
    from starlette.requests import Request
    from starlette.responses import Response

    from workbench.contracts import Scorer, TrajectoryStore

__all__ = ["GatewayService", "build_gateway_app"]


class GatewayService:
    """What the routes share: the policy, its renderer, the open rollouts, where calls are written."""

    def __init__(
        self,
        policy: Policy,
        config: GatewayConfig,
        store: TrajectoryStore | None,
        run_id: str = "",
        scorer: Scorer | None = None,
        call_log: CallLog | None = None,
    ) -> None:
        self.policy, self.config, self.store, self.run_id, self.scorer = policy, config, store, run_id, scorer
        self.call_log = call_log
        self.renderer = ChatRenderer(policy.codec)
        self.admin_key = f"wb-admin-{secrets.token_urlsafe(24)}"
        self.rollouts: dict[str, RolloutState] = {}
        self.url = ""
        self._lock = threading.Lock()

    def open(self, task: Task, policy: Policy | None = None) -> RolloutState:
        """A new rollout of `task`, sampling from `policy` (None: this service's)."""
        state = RolloutState.open(task, self.renderer, self.config, self.run_id)
        state.policy = policy
        state.trajectory.lineage["policy"] = (policy or self.policy).describe()  # what sampled (the viewer reads it)
        with self._lock:
            self.rollouts[state.id] = state
        self.persist(state)
        return state

    def finish(self, rid: str, answer: str | None, error: str | None = None) -> RolloutState:
        state = self.rollouts.get(rid)
        if state is None or state.status != "open":
            raise RequestRefused(
                f"rollout {rid!r} is unknown or already finished", status=404, code="rollout_not_found"
            )
        state.finish(answer, error)
        self.persist(state)
        if error is None and self.scorer is not None:
            with state.lock:
                snapshot = state.snapshot()
            rewards, name, spec_json = score_rollout(self.scorer, snapshot)
            self.record_rewards(state, rewards, name, spec_json, {"source": "gateway", "on": "finish"})
        return state

    def record_rewards(
        self, state: RolloutState, rewards: dict[str, float], name: str, spec_json: Any, provenance: dict[str, Any]
    ) -> None:
        """Make `rewards` the rollout's rewards (in memory and, with their provenance, in the store)."""
        with state.io:
            if state.status == "error":
                raise RequestRefused(f"rollout {state.id!r} ended in error; it is kept but never scored", status=409)
            if self.store is not None:
                self.store.record_rewards(state.id, rewards, name, spec_json, provenance)
            with state.lock:
                state.trajectory.rewards, state.trajectory.reward_spec = dict(rewards), name

    def forget(self, rid: str) -> None:
        """Drop a finished rollout from memory (its URL is then 404 as unknown); the store keeps it."""
        with self._lock:
            state = self.rollouts.get(rid)
            if state is not None and state.status != "open":
                del self.rollouts[rid]

    def expire(self) -> list[str]:
        """End every open rollout past `config.rollout_limit_s` as error; their ids."""
        limit = self.config.rollout_limit_s
        if limit is None:
            return []
        now = time.time()
        with self._lock:
            late = [s for s in self.rollouts.values() if s.status == "open" and now - s.trajectory.started_at > limit]
        for state in late:
            state.finish(None, f"the harness ran past the rollout limit ({limit:g} s) without finishing")
            self.persist(state)
        return [s.id for s in late]

    def record_call(self, state: RolloutState, answer: CallAnswer) -> None:
        """Make one call durable before its reply: a row of the call log, else the whole trajectory written."""
        if self.call_log is None:
            self.persist(state)
            return
        for record, step in zip(answer.records, answer.steps, strict=True):
            with state.lock:
                parent, extends = record.parent, None
                if record.step is not None and not record.segment_start and parent is not None:
                    extends = (parent, list(state.trajectory.steps[parent].observation_ids))
            self.call_log.append(state.id, step, record, extends)

    def persist(self, state: RolloutState) -> None:
        if self.store is not None:
            with state.io:
                with state.lock:
                    snapshot = state.snapshot()
                self.store.write(snapshot)

    def rollout_for(self, request: Request) -> RolloutState:
        """The rollout a request's path names, checked against its bearer key."""
        rid = request.path_params["rid"]
        self.expire()
        state = self.rollouts.get(rid)
        if state is None or state.status != "open":
            raise RequestRefused(
                f"rollout {rid!r} is unknown or finished (or ran past its limit); "
                "open one with gateway.rollout(task) or POST /rollouts",
                status=404,
                code="rollout_not_found",
            )
        key = _bearer(request)
        if key is None:
            raise RequestRefused("no API key: send the rollout's key as `Authorization: Bearer KEY`", status=401)
        if not secrets.compare_digest(key, state.key):
            raise RequestRefused(f"this key does not belong to rollout {rid!r}; use that rollout's api_key", status=403)
        return state

    def require_admin(self, request: Request, state: RolloutState | None = None) -> None:
        key = _bearer(request) or ""
        if secrets.compare_digest(key, self.admin_key) or (
            state is not None and secrets.compare_digest(key, state.key)
        ):
            return
        raise RequestRefused(
            "this needs the gateway's admin key (`ModelGateway.admin_key`)", status=401 if not key else 403
        )


def _bearer(request: Request) -> str | None:
    auth = request.headers.get("authorization", "")
    return auth[7:].strip() if auth[:7].lower() == "bearer " else None


def _json(content: dict[str, Any], status: int = 200) -> Response:
    from starlette.responses import JSONResponse

    return JSONResponse(content, status_code=status)


def _error(exc: BadRequest) -> Response:
    status = getattr(exc, "status", 400)
    return _json(error_body(str(exc), status, getattr(exc, "code", None), getattr(exc, "param", None)), status)


def build_gateway_app(service: GatewayService) -> FastAPI:
    from fastapi import FastAPI

    app = FastAPI(title="workbench model gateway")
    routes = _Routes(service)
    app.add_middleware(
        BodyLimit, max_bytes=service.config.max_body_bytes, make_body=lambda m: error_body(m, 413, "request_too_large")
    )
    app.add_route("/health", routes.health, methods=["GET"])
    app.add_route("/v1/models", routes.models, methods=["GET"])
    app.add_route("/rollouts/{rid}/v1/models", routes.models, methods=["GET"])
    app.add_route("/rollouts/{rid}/v1/chat/completions", routes.chat, methods=["POST"])
    app.add_route("/rollouts/{rid}/v1/completions", routes.completions, methods=["POST"])
    app.add_route("/rollouts", routes.create, methods=["POST"])
    app.add_route("/rollouts/{rid}/finish", routes.finish, methods=["POST"])
    app.add_route("/rollouts/{rid}/reward", routes.reward, methods=["POST"])
    app.add_route("/rollouts/{rid}", routes.show, methods=["GET"])
    for path in ("/v1/chat/completions", "/v1/completions"):
        app.add_route(path, routes.outside, methods=["POST"])
    return app


class _Routes:
    def __init__(self, service: GatewayService) -> None:
        self.service = service

    async def health(self, request: Request) -> Response:
        return _json({"status": "ok"})

    async def models(self, request: Request) -> Response:
        try:
            if "rid" in request.path_params:
                self.service.rollout_for(request)
        except BadRequest as exc:
            return _error(exc)
        policy = self.service.policy
        card = {"id": policy.name, "object": "model", "created": 0, "owned_by": "workbench"}
        return _json({"object": "list", "data": [card]})

    async def outside(self, request: Request) -> Response:
        return _error(
            RequestRefused(
                "calls go to a rollout: use base_url = ROOT/rollouts/{id}/v1 with that rollout's api_key "
                "(gateway.rollout(task), or POST /rollouts with the admin key)",
                status=404,
                code="rollout_not_found",
            )
        )

    async def chat(self, request: Request) -> Response:
        return await self._serve(request, serve_chat)

    async def completions(self, request: Request) -> Response:
        return await self._serve(request, serve_completion)

    async def _serve(self, request: Request, call: Any) -> Response:
        """One call: the rollout checked, a retry answered from the first try, else served and written."""
        service = self.service
        try:
            state = service.rollout_for(request)
            raw = await request.body()
            answer, stream = await _answer(
                state,
                request,
                raw,
                lambda: call(state.policy or service.policy, service.record_call, state, raw, _auxiliary(request)),
            )
        except BadRequest as exc:
            return _error(exc)
        mark, protocol = self._mark(state, answer), state.renderer.tool_protocol
        if stream:
            events = chat_events if answer.record.endpoint == "chat.completions" else completion_events
            return _stream(events(answer.completion, stream == "usage"), mark, protocol)
        return _delivered(answer.completion.model_dump(mode="json", exclude_unset=True), mark, protocol)

    def _mark(self, state: RolloutState, answer: CallAnswer) -> Any:
        """Marks the call delivered; written at the rollout's next write (now, when it already finished)."""

        def mark() -> None:
            with state.lock:
                for record in answer.records:
                    record.delivered = True
                closed = state.status != "open"
            if closed:
                self.service.persist(state)

        return mark

    async def create(self, request: Request) -> Response:
        from workbench.webio import parse_json

        try:
            self.service.require_admin(request)
            body = parse_json(await request.body()) or {}
            if not isinstance(body, dict) or not isinstance(body.get("task", {}), (dict, str)):
                raise BadRequest('send {"task": {"question": ...}} or {"task": "question"}')
            task = body.get("task", {})
            state = self.service.open(Task.from_dict(task if isinstance(task, dict) else {"question": task}))
        except (BadRequest, ConfigError) as exc:
            return _error(exc if isinstance(exc, BadRequest) else BadRequest(str(exc)))
        base = f"{self.service.url}/rollouts/{state.id}/v1"
        return _json({"id": state.id, "base_url": base, "api_key": state.key})

    async def finish(self, request: Request) -> Response:
        from workbench.webio import parse_json

        try:
            rid = request.path_params["rid"]
            self.service.require_admin(request, self.service.rollouts.get(rid))
            body = parse_json(await request.body() or b"{}")
            answer = body.get("answer") if isinstance(body, dict) else None
            state = self.service.finish(rid, None if answer is None else str(answer))
        except BadRequest as exc:
            return _error(exc)
        return _json(_summary(state))

    async def reward(self, request: Request) -> Response:
        from workbench.webio import parse_json

        try:
            state = self.service.rollouts.get(request.path_params["rid"])
            self.service.require_admin(request, state)
            if state is None:
                raise RequestRefused("no such rollout", status=404, code="rollout_not_found")
            rewards, provenance = harness_rewards(parse_json(await request.body()))
            self.service.record_rewards(state, rewards, "harness", None, provenance)
        except ConfigError as exc:
            return _error(exc if isinstance(exc, BadRequest) else BadRequest(str(exc)))
        return _json({**_summary(state), "rewards": rewards})

    async def show(self, request: Request) -> Response:
        try:
            self.service.require_admin(request)
            state = self.service.rollouts.get(request.path_params["rid"])
            if state is None:
                raise RequestRefused("no such rollout", status=404, code="rollout_not_found")
        except BadRequest as exc:
            return _error(exc)
        return _json(_summary(state))


def _summary(state: RolloutState) -> dict[str, Any]:
    with state.lock:
        traj = state.trajectory
        return {
            "id": state.id,
            "status": state.status,
            "calls": len(state.records),
            "steps": len(traj.steps),
            "forks": dict(state.forks),
            "final_answer": traj.final_answer,
            "rewards": dict(traj.rewards),
        }


def _auxiliary(request: Request) -> bool:
    return request.headers.get(AUXILIARY_HEADER, "").strip().lower() in ("1", "true", "yes")


async def _answer(state: RolloutState, request: Request, raw: bytes, serve: Any) -> tuple[CallAnswer, str]:
    """The call's answer: a retry (`x-stainless-retry-count` > 0, the same body) gets the first try's,
    waiting for it while it runs, so a retried request is one recorded call."""
    digest = hashlib.sha256(raw).hexdigest()
    count = request.headers.get("x-stainless-retry-count", "0")
    with state.lock:
        first = state.replies.get(digest) if count.isdigit() and int(count) > 0 else None
    if first is not None:
        return await asyncio.shield(first)
    future: asyncio.Future[tuple[CallAnswer, str]] = asyncio.get_running_loop().create_future()
    with state.lock:
        state.replies[digest] = future
        while len(state.replies) > state.config.retry_memory:
            state.replies.popitem(last=False)
    try:
        result: tuple[CallAnswer, str] = await serve()
    except BaseException as exc:
        with state.lock:
            state.replies.pop(digest, None)
        future.set_exception(exc)
        future.exception()  # retrieved: a retry that never comes must not log it
        raise
    future.set_result(result)
    return result


TOOL_PROTOCOL_HEADER = "x-workbench-tool-protocol"  # "native" or "text": how tools reached the model


def _delivered(body: dict[str, Any], mark: Any, protocol: str) -> Response:
    from starlette.background import BackgroundTask
    from starlette.responses import JSONResponse

    return JSONResponse(body, background=BackgroundTask(mark), headers={TOOL_PROTOCOL_HEADER: protocol})


def _stream(events: Any, mark: Any, protocol: str) -> Response:
    from starlette.responses import StreamingResponse

    async def body() -> Any:
        for event in events:
            yield event
        mark()

    return StreamingResponse(body(), media_type="text/event-stream", headers={TOOL_PROTOCOL_HEADER: protocol})

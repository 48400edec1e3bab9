"""An OpenAI-compatible server for a local transformers model (`workbench serve-model PATH`).

Endpoints, shaped like vLLM's so the same clients work against both:
`GET /health`, `GET /v1/models`, `POST /v1/completions`, `POST /tokenize` (text or chat messages),
`POST /detokenize`. Concurrent requests are merged into batches by `TransformersPolicy`.

`/v1/completions` takes a prompt as text or token ids, one or a list, and `max_tokens`,
`temperature`, `top_p`, `top_k`, `stop`, `seed`, `n` (choices per prompt, index
`prompt * n + j`), `logprobs` (0..20: the sampled token's logprob plus that many top
alternatives per position), `logit_bias`, `presence_penalty`, `frequency_penalty`,
`repetition_penalty`, `return_token_ids`, `include_stop_str_in_output`, `skip_special_tokens`,
and `user` (a label; it changes nothing). Every other field, and `stream`, `echo`, `suffix`,
`best_of` other than `n` or `spaces_between_special_tokens`, is refused with a 400 that names
it: nothing is silently ignored.

Bad input is a 400 for that request only: prompts are checked (token ids inside the vocabulary,
lengths inside the context) before they join a batch. A path or method it lacks (`/v1/chat/completions`)
is a 404/405 naming what it serves and how to chat. Every refusal is an OpenAI error object, so the
`openai` client shows its message. Bodies over `max_body_bytes` get 413;
invalid UTF-8 and lone surrogates in text become U+FFFD (`workbench.safetext`).

    serve_model("runs/tiny", port=8000)                      # blocks
    with ModelServer("runs/tiny") as server:                 # background thread, free port
        policy = OpenAIPolicy(server.url, tokenizer="runs/tiny")
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from workbench.errors import ConfigError, PolicyError, WorkbenchError
from workbench.policies.base import SamplingParams
from workbench.policies.completions_wire import (
    CompletionRequest,
    DetokenizeRequest,
    ModelLimits,
    TokenizeRequest,
    choice,
    encode_text,
    logit_controls,
    parse_request,
    prompt_ids,
    refuse_unsupported,
)
from workbench.webio import BadRequest, BodyLimit, name_routes

if TYPE_CHECKING:
    import uvicorn
    from fastapi import FastAPI
    from fastapi.responses import JSONResponse
    from starlette.requests import Request

    from workbench.policies.hf import TransformersPolicy


_SERVED = (
    "GET /health, GET /v1/models, POST /v1/completions (a prompt as text or token ids), POST /tokenize (text "
    "or chat messages) and POST /detokenize; for a chat, POST /tokenize with the messages and complete the "
    "ids with POST /v1/completions, as workbench's OpenAIPolicy does"
)


def build_app(policy: TransformersPolicy, model_name: str | None = None, limits: ModelLimits | None = None) -> FastAPI:
    """A FastAPI app serving `policy`."""
    from fastapi import FastAPI

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        yield
        if hasattr(policy, "cancel_running"):  # stopping: a long generation must not hold up the exit
            policy.cancel_running()

    app = FastAPI(title="workbench serve-model", lifespan=lifespan)
    routes = _Routes(policy, model_name, limits or ModelLimits())
    app.add_middleware(BodyLimit, max_bytes=routes.limits.max_body_bytes, make_body=lambda m: _error_body(m, 413))
    app.get("/health")(routes.health)
    app.get("/v1/models")(routes.models)
    # POST endpoints read the raw body themselves (see webio)
    app.add_route("/v1/completions", routes.completions, methods=["POST"])
    app.add_route("/tokenize", routes.tokenize, methods=["POST"])
    app.add_route("/detokenize", routes.detokenize, methods=["POST"])
    name_routes(app, _SERVED, make_body=_error_body)  # /v1/chat/completions: the fix, not a bare 404
    return app


def _error_body(message: str, status: int = 400) -> dict[str, Any]:
    kind = "invalid_request_error" if status < 500 else "server_error"
    return {"error": {"message": message, "type": kind, "code": status}}


def _json(content: dict[str, Any], status: int = 200) -> JSONResponse:
    from fastapi.responses import JSONResponse

    return JSONResponse(status_code=status, content=content)


def _error(status: int, message: str) -> JSONResponse:
    return _json(_error_body(message, status), status)


class _Routes:
    """The server's endpoints, sharing the policy, its codec and what the model card says."""

    def __init__(self, policy: TransformersPolicy, model_name: str | None, limits: ModelLimits):
        self.policy, self.limits = policy, limits
        self.name = model_name or policy.name.split(":", 1)[-1]
        self.codec = policy.codec
        self.max_len = getattr(policy, "context_size", None) or policy.max_positions
        self.settings = getattr(policy, "agent_settings", None) or {}  # passed on so OpenAIPolicy runs it as trained
        self.vocab = getattr(policy, "vocab_size", None)

    async def health(self) -> dict[str, str]:
        return {"status": "ok"}

    async def models(self) -> dict[str, Any]:
        card = {
            "id": self.name,
            "object": "model",
            "created": int(time.time()),
            "owned_by": "workbench",
            "max_model_len": self.max_len,
        }
        if self.settings:
            card["workbench_agent"] = self.settings
        return {"object": "list", "data": [card]}

    async def completions(self, request: Request) -> JSONResponse:
        try:
            req = parse_request(CompletionRequest, await request.body())
            if req.model not in (None, self.name):
                return _error(404, f"model {req.model!r} is not served here; this server serves {self.name!r}")
            refuse_unsupported(req)
            prompts = prompt_ids(req, self.codec)
            params = self._sampling_params(req, prompts)
            rows = [p for p in prompts for _ in range(req.n)]  # choice i * n + j samples with seed + i * n + j
            controls = logit_controls(req)
            self.policy.validate(rows, params, controls)  # a bad request fails here, before joining a batch
        except (ConfigError, PolicyError) as exc:
            return _error(getattr(exc, "status", 400), str(exc))
        try:
            kwargs = {"controls": controls} if controls is not None else {}
            results = await self.policy.generate(rows, params, **kwargs)
        except WorkbenchError as exc:
            return _error(500, f"generation failed: {exc}")
        stop = params.stop
        choices = [
            choice(i, ids, c, req, stop, self.codec) for i, (ids, c) in enumerate(zip(rows, results, strict=True))
        ]
        n_prompt = sum(len(p) for p in prompts)
        n_out = sum(len(c.token_ids) for c in results)
        return _json(
            {
                "id": f"cmpl-{uuid.uuid4().hex}",
                "object": "text_completion",
                "created": int(time.time()),
                "model": self.name,
                "choices": choices,
                "usage": {"prompt_tokens": n_prompt, "completion_tokens": n_out, "total_tokens": n_prompt + n_out},
            }
        )

    def _sampling_params(self, req: CompletionRequest, prompts: list[list[int]]) -> SamplingParams:
        """The request's sampling parameters; a 400 when it asks for more choices than one request may."""
        if req.max_tokens is not None and req.max_tokens < 1:
            raise BadRequest(f"max_tokens must be >= 1, got {req.max_tokens} (leave it out: up to the context's end)")
        limit = self.limits.max_choices
        if not 1 <= req.n <= limit or len(prompts) * req.n > limit:
            raise BadRequest(
                f"n: {len(prompts)} prompt(s) x n={req.n} completions; the limit is {limit} "
                "per request (and n >= 1): split the request"
            )
        stop = [req.stop] if isinstance(req.stop, str) else list(req.stop or [])
        longest = max(len(p) for p in prompts)
        room = (self.max_len - longest) if self.max_len else 16
        return SamplingParams(
            max_new_tokens=req.max_tokens if req.max_tokens is not None else max(room, 1),
            temperature=req.temperature,  # None: the model's generation config, else workbench's default
            top_p=req.top_p,
            top_k=None if req.top_k is None else max(req.top_k, 0),  # vLLM's -1 = off = workbench's 0
            stop=stop,
            seed=req.seed,
        )

    async def tokenize(self, request: Request) -> JSONResponse:
        codec = self.codec
        try:
            req = parse_request(TokenizeRequest, await request.body())
            if req.messages is not None:
                if not req.add_generation_prompt:
                    return _error(
                        400,
                        "add_generation_prompt=false is not supported; "
                        "the chat prompt always ends ready for the assistant",
                    )
                if req.add_special_tokens and hasattr(codec, "chat_text"):
                    tokens = encode_text(codec, codec.chat_text(req.messages), True)
                else:
                    tokens = codec.chat(req.messages)
            elif req.prompt is not None:
                tokens = encode_text(codec, req.prompt, req.add_special_tokens is not False)
            else:
                return _error(400, "send 'prompt' (text) or 'messages' (chat)")
        except WorkbenchError as exc:
            return _error(400, str(exc))
        return _json(
            {"count": len(tokens), "max_model_len": self.max_len, "tokens": tokens, "eos_token_id": codec.eos_token_id}
        )

    async def detokenize(self, request: Request) -> JSONResponse:
        try:
            req = parse_request(DetokenizeRequest, await request.body())
        except WorkbenchError as exc:
            return _error(400, str(exc))
        vocab = self.vocab
        bad = next((t for t in req.tokens if vocab is not None and not 0 <= t < vocab), None)
        if bad is not None:
            return _error(400, f"tokens: token id {bad} is outside this model's vocabulary (0..{(vocab or 0) - 1})")
        return _json({"prompt": self.codec.decode(req.tokens)})


def _check_host(host: str) -> None:
    if host not in ("127.0.0.1", "localhost", "::1"):
        raise ConfigError(
            f"serve-model listens on loopback only (got host {host!r}): use 127.0.0.1 and put a "
            "reverse proxy with authentication in front if others must reach it"
        )


def serve_model(
    path: str | Path,
    host: str = "127.0.0.1",
    port: int = 8000,
    *,
    limits: ModelLimits | None = None,
    shutdown_grace: float = 2.0,
    **policy_kwargs: Any,
) -> None:
    """Load the model at `path` and serve it until interrupted (Ctrl-C or SIGTERM; requests still
    running `shutdown_grace` seconds later are cancelled)."""
    import uvicorn

    from workbench.policies.hf import TransformersPolicy

    _check_host(host)
    app = build_app(TransformersPolicy(path, **policy_kwargs), limits=limits)
    # uvicorn waits `timeout_graceful_shutdown` seconds as a float, though it annotates an int
    grace: Any = shutdown_grace
    uvicorn.run(app, host=host, port=port, log_level="warning", timeout_graceful_shutdown=grace)


class ModelServer:
    """Serve a model from a background thread; a context manager for tests and notebooks.

        with ModelServer("runs/tiny") as server:        # or ModelServer(policy=existing_policy)
            httpx.get(server.url + "/health")

    `port=0` picks a free port; `server.url` is `http://HOST:PORT`.
    """

    def __init__(
        self,
        path: str | Path | None = None,
        *,
        policy: TransformersPolicy | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        limits: ModelLimits | None = None,
        **policy_kwargs: Any,
    ) -> None:
        if (path is None) == (policy is None):
            raise ConfigError("ModelServer needs either a model path or policy=..., not both")
        _check_host(host)
        if policy is None:
            from workbench.policies.hf import TransformersPolicy

            assert path is not None  # exactly one of path and policy, checked above
            policy = TransformersPolicy(path, **policy_kwargs)
        self.policy = policy
        self.limits = limits
        self.host = host
        self._sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock.bind((host, port))
        self.port = self._sock.getsockname()[1]
        self.url = f"http://{host}:{self.port}"
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None

    def start(self, timeout: float = 30.0) -> ModelServer:
        import uvicorn

        app = build_app(self.policy, limits=self.limits)
        config = uvicorn.Config(app, log_level="warning", lifespan="off", timeout_graceful_shutdown=2)
        self._server = server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=server.run, kwargs={"sockets": [self._sock]}, daemon=True, name="workbench-serve-model"
        )
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise PolicyError(f"the model server did not start on {self.url}; see the log above")
            time.sleep(0.02)
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.should_exit = True
        if hasattr(self.policy, "cancel_running") and self._thread is not None:
            self._thread.join(timeout=2.5)  # the grace period for requests in flight
            self.policy.cancel_running()
        if self._thread is not None:
            self._thread.join(timeout=10)
        self._sock.close()

    def __enter__(self) -> ModelServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


__all__ = ["CompletionRequest", "ModelLimits", "ModelServer", "build_app", "serve_model"]

"""An OpenAI-compatible server for a local transformers model (`workbench serve-model PATH`).

Endpoints, shaped like vLLM's so the same clients work against both:
`GET /health`, `GET /v1/models`, `POST /v1/completions` (prompt as text or token ids, one or a
list; `max_tokens`, `temperature`, `top_p`, `top_k`, `stop`, `seed`, `logprobs`,
`return_token_ids`, `include_stop_str_in_output`), `POST /tokenize` (text or chat messages),
`POST /detokenize`. Concurrent requests are merged into batches by `TransformersPolicy`.

    serve_model("runs/tiny", port=8000)                      # blocks
    with ModelServer("runs/tiny") as server:                 # background thread, free port
        policy = OpenAIPolicy(server.url, tokenizer="runs/tiny")
"""

from __future__ import annotations

import asyncio
import socket
import threading
import time
import uuid
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from workbench.errors import ConfigError, PolicyError, WorkbenchError
from workbench.policies.base import SamplingParams


class CompletionRequest(BaseModel):
    model_config = ConfigDict(extra="ignore")

    model: str | None = None
    prompt: str | list[int] | list[str] | list[list[int]]
    max_tokens: int | None = 16
    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = 0
    stop: str | list[str] | None = None
    seed: int | None = None
    logprobs: int | None = None
    return_token_ids: bool = False
    include_stop_str_in_output: bool = False
    n: int = 1
    echo: bool = False
    stream: bool = False


class TokenizeRequest(BaseModel):
    model_config = ConfigDict(extra="ignore")

    model: str | None = None
    prompt: str | None = None
    messages: list[dict[str, str]] | None = None
    add_special_tokens: bool = True
    add_generation_prompt: bool = True


class DetokenizeRequest(BaseModel):
    model_config = ConfigDict(extra="ignore")

    model: str | None = None
    tokens: list[int]


def _prompts(req: CompletionRequest, codec) -> list[list[int]]:
    p = req.prompt
    if isinstance(p, str):
        return [codec.encode(p)]
    if not p:
        raise ConfigError("prompt is empty: send text, a list of token ids, or a list of either")
    if isinstance(p[0], int):
        return [list(p)]
    return [codec.encode(x) if isinstance(x, str) else list(x) for x in p]


def build_app(policy: Any, model_name: str | None = None):
    """A FastAPI app serving `policy` (a `TransformersPolicy`)."""
    from fastapi import FastAPI
    from fastapi.responses import JSONResponse

    app = FastAPI(title="workbench serve-model")
    name = model_name or policy.name.split(":", 1)[-1]
    codec = policy.codec
    max_len = policy.max_positions

    def error(status: int, message: str) -> JSONResponse:
        kind = "invalid_request_error" if status < 500 else "server_error"
        return JSONResponse(status_code=status, content={"error": {"message": message, "type": kind, "code": status}})

    @app.get("/health")
    async def health() -> dict[str, str]:
        return {"status": "ok"}

    @app.get("/v1/models")
    async def models() -> dict[str, Any]:
        card = {"id": name, "object": "model", "created": int(time.time()), "owned_by": "workbench", "max_model_len": max_len}
        return {"object": "list", "data": [card]}

    @app.post("/v1/completions")
    async def completions(req: CompletionRequest):
        if req.stream or req.n != 1 or req.echo:
            return error(400, "stream, n > 1 and echo are not supported: send n=1 requests (repeat the prompt for more samples)")
        if req.model not in (None, name):
            return error(404, f"model {req.model!r} is not served here; this server serves {name!r}")
        try:
            prompts = _prompts(req, codec)
            stop = [req.stop] if isinstance(req.stop, str) else list(req.stop or [])
            outs = []
            for i, ids in enumerate(prompts):  # one call per prompt: concurrent calls batch together
                room = (max_len - len(ids)) if max_len else 16
                params = SamplingParams(
                    max_new_tokens=req.max_tokens if req.max_tokens is not None else max(room, 1),
                    temperature=req.temperature,
                    top_p=req.top_p,
                    top_k=max(req.top_k, 0),
                    stop=stop,
                    seed=None if req.seed is None else req.seed + i,
                )
                outs.append(policy.generate([ids], params))
            results = [r[0] for r in await asyncio.gather(*outs)]
        except ConfigError as exc:
            return error(400, str(exc))
        except PolicyError as exc:
            return error(400 if "does not fit" in str(exc) or "empty prompt" in str(exc) else 500, str(exc))
        choices = [_choice(i, ids, c, req, stop, codec) for i, (ids, c) in enumerate(zip(prompts, results))]
        n_prompt = sum(len(p) for p in prompts)
        n_out = sum(len(c.token_ids) for c in results)
        return {
            "id": f"cmpl-{uuid.uuid4().hex}",
            "object": "text_completion",
            "created": int(time.time()),
            "model": name,
            "choices": choices,
            "usage": {"prompt_tokens": n_prompt, "completion_tokens": n_out, "total_tokens": n_prompt + n_out},
        }

    @app.post("/tokenize")
    async def tokenize(req: TokenizeRequest):
        try:
            if req.messages is not None:
                if not req.add_generation_prompt:
                    return error(400, "add_generation_prompt=false is not supported; the chat prompt always ends ready for the assistant")
                tokens = codec.chat(req.messages)
            elif req.prompt is not None:
                tokens = codec.encode(req.prompt)
            else:
                return error(400, "send 'prompt' (text) or 'messages' (chat)")
        except WorkbenchError as exc:
            return error(400, str(exc))
        return {"count": len(tokens), "max_model_len": max_len, "tokens": tokens, "eos_token_id": codec.eos_token_id}

    @app.post("/detokenize")
    async def detokenize(req: DetokenizeRequest):
        return {"prompt": codec.decode(req.tokens)}

    return app


def _choice(index: int, prompt_ids, c, req: CompletionRequest, stop: list[str], codec) -> dict[str, Any]:
    text = c.text
    stop_reason: str | int | None = None
    if c.finish_reason == "stop":
        stop_reason = next((s for s in stop if s in text), None)
        if stop_reason is not None and not req.include_stop_str_in_output:
            text = text[: text.find(stop_reason)]  # OpenAI leaves the stop string out; the ids keep it
    choice: dict[str, Any] = {
        "index": index,
        "text": text,
        "logprobs": None,
        "finish_reason": "length" if c.finish_reason == "length" else "stop",
        "stop_reason": stop_reason,
    }
    if req.logprobs is not None:
        pieces = [codec.decode([t]) for t in c.token_ids]
        offsets, at = [], 0
        for piece in pieces:
            offsets.append(at)
            at += len(piece)
        choice["logprobs"] = {"tokens": pieces, "token_logprobs": c.logprobs, "top_logprobs": None, "text_offset": offsets}
    if req.return_token_ids:
        choice["token_ids"] = c.token_ids
        choice["prompt_token_ids"] = prompt_ids
    return choice


def _check_host(host: str) -> None:
    if host not in ("127.0.0.1", "localhost", "::1"):
        raise ConfigError(
            f"serve-model listens on loopback only (got host {host!r}): use 127.0.0.1 and put a "
            "reverse proxy with authentication in front if others must reach it"
        )


def serve_model(path: str | Path, host: str = "127.0.0.1", port: int = 8000, **policy_kwargs: Any) -> None:
    """Load the model at `path` and serve it until interrupted (blocking)."""
    import uvicorn

    from workbench.policies.hf import TransformersPolicy

    _check_host(host)
    app = build_app(TransformersPolicy(path, **policy_kwargs))
    uvicorn.run(app, host=host, port=port, log_level="warning")


class ModelServer:
    """Serve a model from a background thread; a context manager for tests and notebooks.

        with ModelServer("runs/tiny") as server:        # or ModelServer(policy=existing_policy)
            httpx.get(server.url + "/health")

    `port=0` picks a free port; `server.url` is `http://HOST:PORT`.
    """

    def __init__(self, path: str | Path | None = None, *, policy: Any = None, host: str = "127.0.0.1", port: int = 0, **policy_kwargs: Any):
        if (path is None) == (policy is None):
            raise ConfigError("ModelServer needs either a model path or policy=..., not both")
        _check_host(host)
        if policy is None:
            from workbench.policies.hf import TransformersPolicy

            policy = TransformersPolicy(path, **policy_kwargs)
        self.policy = policy
        self.host = host
        self._sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock.bind((host, port))
        self.port = self._sock.getsockname()[1]
        self.url = f"http://{host}:{self.port}"
        self._server = None
        self._thread: threading.Thread | None = None

    def start(self, timeout: float = 30.0) -> "ModelServer":
        import uvicorn

        config = uvicorn.Config(build_app(self.policy), log_level="warning", lifespan="off")
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [self._sock]}, daemon=True, name="workbench-serve-model")
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise PolicyError(f"the model server did not start on {self.url}; see the log above")
            time.sleep(0.02)
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=10)
        self._sock.close()

    def __enter__(self) -> "ModelServer":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


__all__ = ["CompletionRequest", "ModelServer", "build_app", "serve_model"]

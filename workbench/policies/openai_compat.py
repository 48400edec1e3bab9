"""`OpenAIPolicy`: any OpenAI-compatible server (`vllm serve`, SGLang, `workbench serve-model`).

    policy = OpenAIPolicy("http://127.0.0.1:8000/v1", tokenizer="runs/tiny")
    [out] = await policy.generate([policy.codec.chat(msgs)], SamplingParams(stop=["</code>"]))

Token space when possible. The codec is the local tokenizer at `tokenizer=PATH`, else the
server's `/tokenize` and `/detokenize` endpoints (vLLM and serve-model have them). Prompts go
to `/v1/completions` as token ids, asking for the sampled ids (`return_token_ids`) and their
logprobs (`logprobs=0`), with the stop string kept in the output and special tokens not
skipped. If the server has no `/tokenize` and no tokenizer is given, the policy falls back to
text: prompts are decoded and sent as text, the token ids are UTF-8 bytes (`ByteCodec`), not
the model's, and logprobs are None; `describe()["note"]` says so. Do not train on that.

Connection errors and 502/503/504 are retried with exponential backoff; anything else raises
`PolicyError` with the server's message.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from typing import Any

import httpx

from workbench.errors import ConfigError, PolicyError
from workbench.policies.base import AGENT_SETTINGS_KEY, ByteCodec, Codec, Completion, SamplingParams
from workbench.policies.batching import Row, make_rows
from workbench.safetext import safe_json, safe_text

_RETRY_STATUS = {502, 503, 504}
_TRANSIENT = (httpx.ConnectError, httpx.ConnectTimeout, httpx.RemoteProtocolError, httpx.ReadError)


def _root(url: str) -> str:
    if not url.startswith(("http://", "https://")):
        raise ConfigError(f"base_url {url!r} must start with http:// or https:// (e.g. http://127.0.0.1:8000/v1)")
    url = url.rstrip("/")
    return url[: -len("/v1")] if url.endswith("/v1") else url


def _explain(resp: httpx.Response) -> str:
    try:
        body = resp.json()
        msg = body.get("error", {}).get("message") if isinstance(body.get("error"), dict) else body.get("detail", body)
    except ValueError:
        msg = resp.text[:500]
    return f"HTTP {resp.status_code} from {resp.request.url}: {msg}"


class RemoteCodec:
    """A codec that asks the server (`/tokenize`, `/detokenize`). Blocking calls: fine on loopback."""

    def __init__(self, policy: OpenAIPolicy, eos_token_id: int | None) -> None:
        self._policy = policy
        self._eos = eos_token_id

    @property
    def eos_token_id(self) -> int | None:
        return self._eos

    def chat(self, messages: Sequence[dict[str, str]]) -> list[int]:
        body = {"model": self._policy.model, "messages": safe_json(list(messages)), "add_generation_prompt": True}
        return [int(t) for t in self._policy._post_sync("/tokenize", body).json()["tokens"]]

    def encode(self, text: str) -> list[int]:
        body = {"model": self._policy.model, "prompt": safe_text(text), "add_special_tokens": False}
        return [int(t) for t in self._policy._post_sync("/tokenize", body).json()["tokens"]]

    def decode(self, ids: Sequence[int]) -> str:
        reply = self._policy._post_sync("/detokenize", {"model": self._policy.model, "tokens": list(ids)})
        return str(reply.json()["prompt"])


class OpenAIPolicy:
    """A policy served over HTTP. `model=None` takes the server's first model."""

    def __init__(
        self,
        base_url: str,
        model: str | None = None,
        *,
        api_key: str | None = None,
        tokenizer: Any = None,
        timeout: float = 300.0,
        retries: int = 4,
        backoff: float = 0.5,
        max_concurrency: int = 64,
    ):
        self.root = _root(base_url)
        self.headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.timeout, self.retries, self.backoff = timeout, retries, backoff
        self.max_concurrency = max_concurrency
        card = self._model_card(model)
        self.model = model or card["id"]
        size = card.get("max_model_len")
        self.context_size: int | None = size if isinstance(size, int) and size > 0 else None  # the server's window
        settings = card.get(AGENT_SETTINGS_KEY)  # serve-model passes on the model dir's agent settings
        self.agent_settings: dict[str, Any] = dict(settings) if isinstance(settings, dict) else {}
        self.name = f"openai:{self.model}"
        self.codec, self.token_space, self.note = self._pick_codec(tokenizer)

    # -- set-up ---------------------------------------------------------------------------
    def _model_card(self, model: str | None) -> dict[str, Any]:
        """The served model's card from /v1/models (its id, `max_model_len` where the server says).
        With `model` named, a server without /v1/models is fine: the card is then just the id."""
        try:
            data = self._request_sync("GET", "/v1/models").json().get("data") or []
        except PolicyError as exc:
            if model is None or ("HTTP 404" not in str(exc) and "HTTP 405" not in str(exc)):
                raise
            data = []
        cards = [c for c in data if isinstance(c, dict) and "id" in c]
        if model is not None:
            return next((c for c in cards if c["id"] == model), {"id": model})
        if not cards:
            raise PolicyError(f"{self.root}/v1/models lists no models; pass model=NAME")
        return cards[0]

    def _pick_codec(self, tokenizer: Any) -> tuple[Codec, bool, str]:
        if tokenizer is not None:
            from workbench.policies.codec import TokenizerCodec

            if isinstance(tokenizer, str):
                from transformers import AutoTokenizer

                tokenizer = AutoTokenizer.from_pretrained(tokenizer, local_files_only=True)
            return TokenizerCodec(tokenizer), True, "local tokenizer; token ids and logprobs from the server"
        try:
            probe = self._post_sync("/tokenize", {"model": self.model, "prompt": "a"}).json()
        except PolicyError as exc:
            if "HTTP 404" not in str(exc) and "HTTP 405" not in str(exc):
                raise
            note = (
                "TEXT MODE: the server has no /tokenize and no tokenizer was given, so prompts are sent as "
                "text, token ids are UTF-8 bytes (not the model's tokens) and logprobs are None; "
                "pass tokenizer=PATH to work in token space"
            )
            return ByteCodec(), False, note
        return (
            RemoteCodec(self, probe.get("eos_token_id")),
            True,
            "server /tokenize; token ids and logprobs from the server",
        )

    def describe(self) -> dict[str, Any]:
        return {
            "backend": "openai",
            "name": self.name,
            "url": self.root,
            "model": self.model,
            "token_space": self.token_space,
            "context_size": self.context_size,
            "note": self.note,
        }

    # -- HTTP -----------------------------------------------------------------------------
    def _request_sync(self, method: str, path: str, json: Any = None) -> httpx.Response:
        with httpx.Client(timeout=self.timeout, headers=self.headers) as client:
            for attempt in range(self.retries + 1):
                try:
                    resp = client.request(method, self.root + path, json=json)
                except _TRANSIENT as exc:
                    if attempt == self.retries:
                        raise self._unreachable(exc) from exc
                else:
                    if resp.status_code not in _RETRY_STATUS or attempt == self.retries:
                        if resp.status_code >= 400:
                            raise PolicyError(_explain(resp))
                        return resp
                time.sleep(self.backoff * 2**attempt)
        raise AssertionError("unreachable")

    def _post_sync(self, path: str, body: dict[str, Any]) -> httpx.Response:
        return self._request_sync("POST", path, body)

    async def _post(self, client: httpx.AsyncClient, path: str, body: dict[str, Any]) -> dict[str, Any]:
        for attempt in range(self.retries + 1):
            try:
                resp = await client.post(self.root + path, json=body)
            except _TRANSIENT as exc:
                if attempt == self.retries:
                    raise self._unreachable(exc) from exc
            else:
                if resp.status_code not in _RETRY_STATUS or attempt == self.retries:
                    if resp.status_code >= 400:
                        raise PolicyError(_explain(resp))
                    data: dict[str, Any] = resp.json()
                    return data
            await asyncio.sleep(self.backoff * 2**attempt)
        raise AssertionError("unreachable")

    def _unreachable(self, exc: Exception) -> PolicyError:
        return PolicyError(
            f"cannot reach the model server at {self.root} after {self.retries + 1} tries ({exc!r}); is it "
            "running? Start one with `workbench serve-model PATH` or `vllm serve MODEL`"
        )

    # -- generation -----------------------------------------------------------------------
    async def generate(self, prompts: Sequence[list[int]], params: SamplingParams) -> list[Completion]:
        rows = make_rows(prompts, params)
        limit = asyncio.Semaphore(self.max_concurrency)
        async with httpx.AsyncClient(timeout=self.timeout, headers=self.headers) as client:

            async def one(row: Row) -> Completion:
                async with limit:
                    return await self._parse(
                        client, await self._post(client, "/v1/completions", self._body(row)), params
                    )

            return list(await asyncio.gather(*(one(r) for r in rows)))

    def _body(self, row: Row) -> dict[str, Any]:
        p = row.params
        body: dict[str, Any] = {
            "model": self.model,
            "prompt": row.prompt if self.token_space else self.codec.decode(row.prompt),
            "max_tokens": p.max_new_tokens,
            "stop": list(p.stop) or None,
            "logprobs": 0,
            "return_token_ids": True,
            "include_stop_str_in_output": True,
            "skip_special_tokens": False,
            "spaces_between_special_tokens": False,
        }
        for name in ("temperature", "top_p", "top_k"):  # unset: the server's default (vLLM: the model's own)
            if getattr(p, name) is not None:
                body[name] = getattr(p, name)
        if row.seed is not None:
            body["seed"] = row.seed
        return body

    async def _parse(self, client: httpx.AsyncClient, resp: dict[str, Any], params: SamplingParams) -> Completion:
        try:
            choice = resp["choices"][0]
        except (KeyError, IndexError, TypeError):
            raise PolicyError(f"the server's completion response has no choices: {str(resp)[:300]}") from None
        eos = self.codec.eos_token_id
        ids = choice.get("token_ids") if self.token_space else None
        lps = (choice.get("logprobs") or {}).get("token_logprobs") if self.token_space else None
        if ids is None:  # text only: re-encode (exact for ByteCodec, approximate for a tokenizer)
            ids = self.codec.encode(choice.get("text", ""))
            lps = None
        reason, stop_reason = choice.get("finish_reason"), choice.get("stop_reason")
        if reason == "length":
            finish = "length"
        elif isinstance(stop_reason, str) or (
            stop_reason is None and any(s in choice.get("text", "") for s in params.stop)
        ):
            finish = "stop"
        else:
            finish = "eos"
            if not self.token_space and eos is not None:
                ids = [*ids, eos]
        shown = ids[:-1] if finish == "eos" and ids and ids[-1] == eos else ids
        if not self.token_space:
            text = choice.get("text", "")
        elif isinstance(self.codec, RemoteCodec):  # decode on the server without blocking the loop
            text = (await self._post(client, "/detokenize", {"model": self.model, "tokens": list(shown)}))["prompt"]
        else:
            text = self.codec.decode(shown)
        if lps is not None and len(lps) != len(ids):
            lps = None
        return Completion(text=text, token_ids=list(ids), logprobs=lps, finish_reason=finish)


__all__ = ["OpenAIPolicy", "RemoteCodec"]

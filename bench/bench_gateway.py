"""The model gateway's added latency and storage, against a bare chat endpoint measured in the same run.

    .venv/bin/python bench/bench_gateway.py [--calls 1000] [--kb 100]

The same harness (a sync `openai` client, 20-turn conversations over a ~100 KB message list) calls
(a) a bare FastAPI chat endpoint on uvicorn that renders the chat template, samples from the same
`ScriptedPolicy` and replies, with no capture, and (b) the model gateway in front of that policy,
writing every call to a SQLite store before replying. Both use the demo's ChatML tokenizer.
Printed for scripts: `gateway added latency p50: X ms, p99: Y ms` (targets: 5 ms, 20 ms), and the
storage of a 50-call rollout as a ratio to its final context's tokens (target <= 1.1).
Then 16 concurrent rollouts of a real-model harness (the demo's tiny transformers model, 3 turns each)
through the gateway against the same harness on the bare endpoint: the wall-time ratio (target <= 1.03).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from _util import add_smoke_flag, figure, record  # noqa: E402

TURNS = 20


def policy():
    from workbench.models import build_tokenizer, sample_texts
    from workbench.policies import ScriptedPolicy
    from workbench.policies.codec import TokenizerCodec

    codec = TokenizerCodec(build_tokenizer(sample_texts(30), vocab_size=320))
    return ScriptedPolicy(lambda _context, turn: f"answer {turn}: the sky is blue.", codec=codec, name="bench")


def bare_server(pol):
    """A chat endpoint with no capture: parse, render the template, sample, reply."""
    import json

    import uvicorn
    from starlette.applications import Starlette
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    from workbench.policies import SamplingParams

    async def chat(request):
        body = json.loads(await request.body())
        messages = [{"role": m["role"], "content": m.get("content") or ""} for m in body["messages"]]
        [out] = await pol.generate([pol.codec.chat(messages)], SamplingParams(max_new_tokens=64))
        message = {"role": "assistant", "content": out.text}
        choice = {"index": 0, "message": message, "finish_reason": "stop"}
        return JSONResponse({"id": "x", "object": "chat.completion", "created": 0, "model": "m", "choices": [choice]})

    app = Starlette(routes=[Route("/v1/chat/completions", chat, methods=["POST"])])
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    return server, thread, f"http://127.0.0.1:{port}/v1"


def harness(base_url: str, api_key: str, calls: int, kb: int, latencies: list[float]) -> None:
    """`calls` chat calls in conversations of TURNS turns, each over a message list of about `kb` KB."""
    import openai

    client = openai.OpenAI(base_url=base_url, api_key=api_key, max_retries=0)
    filler = ("The quick brown fox jumps over the lazy dog. " * (kb * 1024 // 45 + 1))[: kb * 1024]
    messages: list = []
    for i in range(calls):
        if i % TURNS == 0:
            messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": filler}]
        t = time.perf_counter()
        reply = client.chat.completions.create(model="m", messages=messages)
        latencies.append(time.perf_counter() - t)
        messages += [{"role": "assistant", "content": reply.choices[0].message.content}]
        messages += [{"role": "user", "content": f"and then {i}?"}]
    client.close()


def pct(xs: list[float], q: float) -> float:
    return statistics.quantiles(xs, n=100)[q - 1] if len(xs) > 1 else xs[0]


def latency(calls: int, kb: int) -> None:
    from workbench.gateway import ModelGateway
    from workbench.store import Store

    pol = policy()
    server, thread, url = bare_server(pol)
    direct: list[float] = []
    harness(url, "none", min(TURNS, calls), kb, [])  # warm both paths
    harness(url, "none", calls, kb, direct)
    server.should_exit = True
    thread.join()
    with tempfile.TemporaryDirectory() as tmp, Store(Path(tmp) / "run") as store:
        with ModelGateway(pol, store=store) as gw:
            through: list[float] = []
            for start in range(0, calls, TURNS):
                with gw.rollout("bench") as r:
                    harness(r.base_url, r.api_key, min(TURNS, calls - start), kb, through)
    d50, d99, g50, g99 = pct(direct, 50), pct(direct, 99), pct(through, 50), pct(through, 99)
    figure(f"direct chat call p50 ({kb} KB)", d50 * 1e3, "ms")
    figure(f"gateway chat call p50 ({kb} KB)", g50 * 1e3, "ms", baseline=d50 * 1e3)
    figure(f"gateway chat call p99 ({kb} KB)", g99 * 1e3, "ms", baseline=d99 * 1e3)
    added50, added99 = (g50 - d50) * 1e3, (g99 - d99) * 1e3
    print(f"gateway added latency p50: {added50:.2f} ms, p99: {added99:.2f} ms", flush=True)
    record("gateway added latency p50", added50, "ms", target="<= 5 ms", ok=added50 <= 5)
    record("gateway added latency p99", added99, "ms", target="<= 20 ms", ok=added99 <= 20)


def storage(calls: int) -> None:
    """Ids stored for a `calls`-call rollout against its final context's tokens."""
    from workbench.gateway import ModelGateway

    with ModelGateway(policy()) as gw, gw.rollout("bench") as r:
        harness(r.base_url, r.api_key, 1, 1, [])  # the first call opens the segment
        messages = [{"role": "user", "content": "start"}]
        for i in range(calls - 1):
            reply = r.sync_client.chat.completions.create(model="m", messages=messages)
            messages += [reply.choices[0].message.model_dump(exclude_none=True), {"role": "user", "content": f"go {i}"}]
        traj = r.trajectory
    stored = sum(len(s.prompt_ids or []) + len(s.completion_ids) + len(s.observation_ids) for s in traj.steps)
    final = sum(len(seg["prompt_ids"]) + len(seg["completion_ids"]) for seg in traj.segments())
    figure(
        f"stored ids / final context ids ({calls} calls)",
        stored / final,
        "x",
        target="<= 1.1",
        ok=stored <= 1.1 * final,
    )


def concurrent(rollouts: int, turns: int) -> None:
    """Wall time of `rollouts` concurrent real-model harnesses through the gateway over the bare endpoint's."""
    import asyncio

    import openai

    from workbench.gateway import ModelGateway
    from workbench.models import build_tiny_model, sample_texts
    from workbench.policies import TransformersPolicy

    with tempfile.TemporaryDirectory() as tmp:
        pol = TransformersPolicy(build_tiny_model(Path(tmp) / "tiny", sample_texts(), vocab_size=400, seed=0))

        async def play(base_url: str, api_key: str, k: int) -> None:
            messages = [{"role": "user", "content": f"Question {k}?"}]
            async with openai.AsyncOpenAI(base_url=base_url, api_key=api_key, max_retries=0) as client:
                for _ in range(turns):
                    reply = await client.chat.completions.create(model="m", messages=messages, max_tokens=16, seed=k)
                    messages += [{"role": "assistant", "content": reply.choices[0].message.content or ""}]
                    messages += [{"role": "user", "content": "Go on."}]

        async def direct(url: str) -> float:
            t = time.perf_counter()
            await asyncio.gather(*(play(url, "none", k) for k in range(rollouts)))
            return time.perf_counter() - t

        async def through(gw: ModelGateway) -> float:
            opened = [gw.rollout(f"q{k}") for k in range(rollouts)]
            t = time.perf_counter()
            await asyncio.gather(*(play(r.base_url, r.api_key, k) for k, r in enumerate(opened)))
            wall = time.perf_counter() - t
            for r in opened:
                r.finish()
            return wall

        server, thread, url = bare_server(pol)
        asyncio.run(direct(url))  # warm the model
        bare = asyncio.run(direct(url))
        server.should_exit = True
        thread.join()
        with ModelGateway(pol) as gw:
            gated = asyncio.run(through(gw))
    figure(f"{rollouts} real-model rollouts, direct wall", bare, "s")
    figure(f"{rollouts} real-model rollouts, gateway wall", gated, "s", baseline=bare, target="<= 1.03x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--kb", type=int, default=100)
    add_smoke_flag(parser)
    args = parser.parse_args()
    if args.smoke:
        args.calls, args.kb = 40, 10
    latency(args.calls, args.kb)
    storage(50)
    concurrent(4 if args.smoke else 16, 2 if args.smoke else 3)


if __name__ == "__main__":
    main()

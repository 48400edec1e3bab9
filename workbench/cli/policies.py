"""`workbench serve-model MODEL`: serve a transformers model over an OpenAI-compatible API
(`--engine vllm`: vLLM's own server, `vllm serve`, with the settings VLLMPolicy uses)."""

from __future__ import annotations

import argparse
import os
import shlex


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "serve-model",
        help="serve a transformers model on loopback with an OpenAI-compatible API",
        description="Serve a Hugging Face model (hub id, local dir, GGUF file or `workbench models` name): "
        "/v1/models, /v1/completions, /tokenize, /detokenize, /health.",
    )
    p.add_argument(
        "path",
        metavar="MODEL",
        help="hub id (ORG/NAME[@REV]), local model directory, GGUF file or a name from `workbench models list`",
    )
    p.add_argument("--host", default="127.0.0.1", help="loopback address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8000, help="port (default 8000)")
    p.add_argument("--device", default="auto", help="cpu, cuda, cuda:N or auto (default)")
    p.add_argument("--dtype", default="auto", help="auto (default), float32, bfloat16, float16")
    p.add_argument(
        "--batch-window-ms", type=float, default=5.0, help="how long to gather concurrent requests into a batch"
    )
    p.add_argument("--max-batch-size", type=int, default=32, help="most rows in one batch")
    p.add_argument(
        "--max-body-bytes", type=int, default=16 << 20, help="larger request bodies get 413 (default 16 MiB)"
    )
    p.add_argument(
        "--max-choices", type=int, default=256, help="most completions (prompts x n) in one request (default 256)"
    )
    p.add_argument(
        "--engine",
        choices=("workbench", "vllm"),
        default="workbench",
        help="workbench (default): the in-house server; vllm: run `vllm serve` (CUDA or CPU build)",
    )
    p.add_argument(
        "--kv-cache-gib",
        type=float,
        default=None,
        help="vllm on CPU: memory reserved for the KV cache, GiB (default 1)",
    )
    p.add_argument("--vllm-args", default="", help="vllm: more `vllm serve` flags, one quoted string")
    from workbench.cli.plugins import add_plugin_argument

    add_plugin_argument(p)
    p.set_defaults(func=_serve)


def _serve_vllm(args: argparse.Namespace) -> int:
    from workbench.policies.server import _check_host
    from workbench.policies.vllm_engine import vllm_serve_argv

    _check_host(args.host)
    argv = vllm_serve_argv(
        args.path,
        host=args.host,
        port=args.port,
        dtype=args.dtype,
        max_num_seqs=args.max_batch_size,
        kv_cache_gib=args.kv_cache_gib,
        extra=shlex.split(args.vllm_args),
    )
    print(f"serving {args.path} with vLLM at http://{args.host}:{args.port}/v1: {shlex.join(argv[1:])}", flush=True)
    os.execv(argv[0], argv)  # vLLM's server takes over this process (signals, exit code)


def _serve(args: argparse.Namespace) -> int:
    if args.engine == "vllm":
        return _serve_vllm(args)
    from workbench.agent.config import read_model_settings
    from workbench.models.resolve import resolve_model
    from workbench.policies.server import ModelLimits, serve_model

    settings = read_model_settings(resolve_model(args.path).directory)
    if settings:  # /v1/models passes them on: OpenAIPolicy clients run the model as it was trained
        items = ", ".join(f"{k}={v!r}" for k, v in settings.items())
        print(f"agent settings from the model (served in /v1/models, used by openai: clients): {items}", flush=True)
    print(f"serving {args.path} at http://{args.host}:{args.port}/v1  (Ctrl-C to stop)", flush=True)
    serve_model(
        args.path,
        host=args.host,
        port=args.port,
        device=args.device,
        dtype=args.dtype,
        batch_window_ms=args.batch_window_ms,
        max_batch_size=args.max_batch_size,
        limits=ModelLimits(max_body_bytes=args.max_body_bytes, max_choices=args.max_choices),
    )
    return 0

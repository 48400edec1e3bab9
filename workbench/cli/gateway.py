"""`workbench serve-gateway MODEL`: the model gateway on loopback in front of a policy, for harnesses
in other processes (open rollouts with `POST /rollouts` and the admin key it prints)."""

from __future__ import annotations

import argparse


def register(subparsers: argparse._SubParsersAction) -> None:
    from workbench.cli.plugins import add_plugin_argument

    p = subparsers.add_parser(
        "serve-gateway",
        help="serve a policy to agent harnesses through the token-recording model gateway",
        description="An OpenAI-compatible API per rollout (/rollouts/{id}/v1): chat completions, completions, "
        "models; every call recorded to the run directory's store before its reply.",
    )
    p.add_argument(
        "model",
        metavar="MODEL",
        help="a policy spec (transformers:PATH, vllm:PATH, openai:URL, scripted[:NAME], or a registered backend), "
        "or a model (hub id, local dir, GGUF file or `workbench models` name) served with transformers",
    )
    p.add_argument("--store", required=True, metavar="RUN_DIR", help="run directory whose store records the calls")
    p.add_argument("--host", default="127.0.0.1", help="loopback address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8100, help="port (default 8100)")
    p.add_argument("--max-body-bytes", type=int, default=64 << 20, help="larger bodies get 413 (default 64 MiB)")
    p.add_argument(
        "--train-temperature",
        type=float,
        default=None,
        help="training mode: every call samples at this temperature (and --train-top-p) whatever the harness asks",
    )
    p.add_argument("--train-top-p", type=float, default=1.0, help="training mode's top_p (default 1.0)")
    p.add_argument(
        "--history",
        choices=("sampled", "template"),
        default="sampled",
        help="templates that rewrite history: keep the sampled history (default) or the template's (a fork per turn)",
    )
    add_plugin_argument(p)
    p.set_defaults(func=_serve)


def policy_spec(model: str) -> str:
    """MODEL as a policy spec: kept when it names a registered backend, else served with transformers."""
    from workbench.policies.registry import backend_names
    from workbench.resolve import builtin_policies

    builtin_policies()
    kind = model.partition(":")[0].lower()
    return model if (":" in model and kind in backend_names()) or model in backend_names() else f"transformers:{model}"


def _serve(args: argparse.Namespace) -> int:
    import signal
    import threading

    from workbench.gateway import GatewayConfig, ModelGateway, TrainingSampling
    from workbench.resolve import resolve_policy

    training = None if args.train_temperature is None else TrainingSampling(args.train_temperature, args.train_top_p)
    config = GatewayConfig(max_body_bytes=args.max_body_bytes, training=training, history=args.history)
    policy = resolve_policy(policy_spec(args.model))
    with ModelGateway(policy, store=args.store, config=config, host=args.host, port=args.port) as gw:
        print(f"model gateway for {policy.name} at {gw.url}  (tools: {gw.tool_protocol} protocol)", flush=True)
        print(f"admin key: {gw.admin_key}", flush=True)
        print(f'open a rollout: POST {gw.url}/rollouts {{"task": {{"question": ...}}}} with the admin key', flush=True)
        stop = threading.Event()
        for sig in (signal.SIGINT, signal.SIGTERM):  # Ctrl-C or a supervisor's TERM: stop cleanly
            signal.signal(sig, lambda *_: stop.set())
        while not stop.wait(0.5):
            pass
    return 0

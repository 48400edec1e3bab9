"""`workbench kernels install|demo`: the sandboxed kernelspec for JupyterLab, and a demo.

workbench kernels install --user               # "workbench (sandboxed)" in JupyterLab
workbench kernels install --prefix .venv --profile networked
workbench kernels demo                         # a printed tour of the sandbox
"""

from __future__ import annotations

import argparse
from typing import Any

from workbench.kernel.kernelspec import KERNEL_NAME, install_kernelspec


def register(subparsers: Any) -> None:
    p = subparsers.add_parser("kernels", help="sandboxed Jupyter kernels: install the kernelspec, demo")
    sub = p.add_subparsers(dest="kernels_command", metavar="ACTION")
    inst = sub.add_parser("install", help='install the "workbench (sandboxed)" kernelspec')
    where = inst.add_mutually_exclusive_group()
    where.add_argument("--user", action="store_true", help="install for this user (~/.local/share/jupyter)")
    where.add_argument("--prefix", help="install under PREFIX/share/jupyter (e.g. a venv)")
    inst.add_argument("--profile", default="default", help="sandbox profile name or .toml path")
    inst.add_argument("--name", default=KERNEL_NAME, help="kernelspec name")
    inst.set_defaults(func=_install)
    demo = sub.add_parser("demo", help="start a sandboxed kernel and show its isolation")
    demo.set_defaults(func=_demo)
    p.set_defaults(func=lambda args: p.print_help() or 2)


def _install(args: argparse.Namespace) -> int:
    path = install_kernelspec(user=args.user, prefix=args.prefix, profile=args.profile, name=args.name)
    print(f"installed kernelspec '{args.name}' in {path}")
    return 0


def _demo(args: argparse.Namespace) -> int:
    from workbench.kernel.tour import main

    return main()

"""`workbench kernels install|demo`: the sandboxed kernelspec for JupyterLab, and a demo.

workbench kernels install --user               # "workbench (sandboxed)" in JupyterLab
workbench kernels install --prefix .venv --profile networked
workbench kernels demo                         # a printed tour of the sandbox
"""

from __future__ import annotations

import argparse
from typing import Any

KERNEL_NAME = "workbench-sandboxed"


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


def install_kernelspec(
    *, user: bool = False, prefix: str | None = None, profile: str = "default", name: str = KERNEL_NAME
) -> str:
    """Install the kernelspec from `kernels/` with this interpreter; returns where it went."""
    import json
    import shutil
    import sys
    import tempfile
    from pathlib import Path

    from jupyter_client.kernelspec import KernelSpecManager

    from workbench.sandbox import load_profile

    load_profile(profile)  # fail now, not when JupyterLab starts the kernel
    source = Path(__file__).resolve().parents[2] / "kernels" / KERNEL_NAME
    with tempfile.TemporaryDirectory() as tmp:
        staged = Path(tmp) / name
        shutil.copytree(source, staged)
        spec = json.loads((staged / "kernel.json").read_text())
        spec["argv"][0] = sys.executable
        if profile != "default":
            spec["argv"] += ["--profile", str(Path(profile).resolve()) if profile.endswith(".toml") else profile]
            spec["display_name"] += f" [{Path(profile).stem}]"
        spec["metadata"]["workbench"]["profile"] = profile
        (staged / "kernel.json").write_text(json.dumps(spec, indent=2))
        return KernelSpecManager().install_kernel_spec(str(staged), name, user=user, prefix=prefix)


def _install(args: argparse.Namespace) -> int:
    path = install_kernelspec(user=args.user, prefix=args.prefix, profile=args.profile, name=args.name)
    print(f"installed kernelspec '{args.name}' in {path}")
    return 0


def _demo(args: argparse.Namespace) -> int:
    from workbench.kernel.tour import main

    return main()

"""The sandboxed kernelspec for JupyterLab ("workbench (sandboxed)"): `workbench kernels install` calls this."""

from __future__ import annotations

KERNEL_NAME = "workbench-sandboxed"


def install_kernelspec(
    *, user: bool = False, prefix: str | None = None, profile: str = "default", name: str = KERNEL_NAME
) -> str:
    """Install the kernelspec from the shipped `kernels/` folder (`workbench.shipped`) with this interpreter;
    returns where it went."""
    import json
    import shutil
    import sys
    import tempfile
    from pathlib import Path

    from jupyter_client.kernelspec import KernelSpecManager

    from workbench.sandbox import load_profile
    from workbench.shipped import shipped_dir

    load_profile(profile)  # fail now, not when JupyterLab starts the kernel
    source = shipped_dir("kernels") / KERNEL_NAME
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


__all__ = ["KERNEL_NAME", "install_kernelspec"]

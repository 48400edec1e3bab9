"""The build's one addition to pyproject.toml: the wheel carries the repository's `sandbox/profiles` and
`kernels` folders as package data under `workbench/_shipped/` (workbench.shipped finds them there)."""

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
SHIPPED = ("sandbox/profiles", "kernels")  # as workbench.shipped.SHIPPED


class BuildWithShipped(build_py):
    def run(self) -> None:
        super().run()
        if self.editable_mode:  # an editable install reads the repository's folders in place
            return
        for name in SHIPPED:
            target = Path(self.build_lib) / "workbench" / "_shipped" / name
            shutil.rmtree(target, ignore_errors=True)
            shutil.copytree(ROOT / name, target, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))


setup(cmdclass={"build_py": BuildWithShipped})

"""Start JupyterLab on loopback for a browser test or bench: free port, token, temp root and
settings, no browser, no network; and open Debian's Chromium through Playwright.

    with lab_server(tmp, notebook=REPO / "notebooks/_browser_viewer.ipynb", env={"X": "1"}) as url:
        with chromium() as browser: page = browser.new_page(); page.goto(url)
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[2]
ARTIFACTS = REPO / "test-artifacts"  # every screenshot; `make screenshots` copies the docs' ones to docs/images/
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
# User settings for the temp Lab: start the notebook's kernel without asking, never fetch news.
_LAB_SETTINGS = {
    "@jupyterlab/notebook-extension/tracker": {"autoStartDefaultKernel": True},
    "@jupyterlab/apputils-extension/notification": {"fetchNews": "false", "checkForUpdates": False},
}


class LabError(RuntimeError):
    pass


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def lab_server(tmp: Path, notebook: Path, env: dict[str, str] | None = None) -> Iterator[str]:
    """Yield the URL of `notebook` (copied as viewer.ipynb) in a fresh JupyterLab."""
    root = tmp / "root"
    root.mkdir(parents=True)
    shutil.copy(notebook, root / "viewer.ipynb")
    settings = tmp / "lab-settings"
    for name, values in _LAB_SETTINGS.items():
        path = settings / f"{name}.jupyterlab-settings"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(values))
    port, token = _free_port(), secrets.token_hex(16)
    full_env = {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "JUPYTER_CONFIG_DIR": str(tmp / "config"),
        "JUPYTER_RUNTIME_DIR": str(tmp / "runtime"),
        "JUPYTER_DATA_DIR": str(tmp / "data"),
        "IPYTHONDIR": str(tmp / "ipython"),
        "JUPYTERLAB_SETTINGS_DIR": str(settings),
        "JUPYTERLAB_WORKSPACES_DIR": str(tmp / "workspaces"),
        **(env or {}),
    }
    log_path = tmp / "lab.log"
    log = open(log_path, "w")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "jupyterlab",
            "--ServerApp.ip=127.0.0.1",
            f"--ServerApp.port={port}",
            "--ServerApp.port_retries=0",
            f"--IdentityProvider.token={token}",
            f"--ServerApp.root_dir={root}",
            "--ServerApp.open_browser=False",
            "--LabApp.news_url=",
            "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
            "--LabApp.extension_manager=readonly",
            "--KernelSpecManager.ensure_native_kernel=True",
            *(["--allow-root"] if os.geteuid() == 0 else []),
        ],
        cwd=root,
        env=full_env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + 90
        while True:
            if proc.poll() is not None:
                raise LabError(f"JupyterLab exited early:\n{log_path.read_text()[-3000:]}")
            try:
                if httpx.get(f"{base}/api/status", params={"token": token}, timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.time() > deadline:
                raise LabError(f"JupyterLab did not answer in 90 s:\n{log_path.read_text()[-3000:]}")
            time.sleep(0.5)
        # Start the notebook's kernel up front, so Lab attaches to it instead of asking which one.
        httpx.post(
            f"{base}/api/sessions",
            params={"token": token},
            timeout=30,
            json={"path": "viewer.ipynb", "type": "notebook", "name": "viewer.ipynb", "kernel": {"name": "python3"}},
        ).raise_for_status()
        yield f"{base}/lab/tree/viewer.ipynb?token={token}"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


def require_chromium() -> None:
    """Skip under WORKBENCH_SKIP_BROWSER=1; fail with the fix where Chromium is missing."""
    import pytest

    if os.environ.get("WORKBENCH_SKIP_BROWSER") == "1":
        pytest.skip("WORKBENCH_SKIP_BROWSER=1")
    if not os.access(CHROMIUM, os.X_OK):
        pytest.fail(
            f"Chromium not found at {CHROMIUM}: install it with `apt-get install -y chromium` "
            "(or `make setup-browser`), or set WORKBENCH_SKIP_BROWSER=1 to skip this test"
        )


def shot(page, name: str, locator=None) -> None:
    """A screenshot `ARTIFACTS/<name>.png` of `locator` (scrolled into view), else of the page."""
    if locator is not None:
        locator.scroll_into_view_if_needed()
        locator.screenshot(path=str(ARTIFACTS / f"{name}.png"))
    else:
        page.screenshot(path=str(ARTIFACTS / f"{name}.png"))


def open_and_run_all(page, url: str) -> None:
    """Open the notebook at `url` in `page` and run all its cells."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    page.goto(url)
    page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=90_000)
    page.wait_for_selector(".jp-Notebook-ExecutionIndicator[data-status='idle']", timeout=90_000, state="attached")
    try:  # older settings or a slow start can still bring up the kernel picker
        page.locator(".jp-Dialog").get_by_role("button", name="Select").click(timeout=3_000)
    except PlaywrightTimeout:
        pass
    page.get_by_role("menuitem", name="Run", exact=True).click()
    page.get_by_text("Run All Cells", exact=True).click()

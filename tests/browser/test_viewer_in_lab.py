"""The viewer in a real JupyterLab, driven through Debian's Chromium by Playwright.

Starts JupyterLab on loopback (free port, token, temp root, no browser), opens
`notebooks/_browser_viewer.ipynb`, runs all cells, checks the TrajectoryViewer renders and that
clicking "next step" changes the code shown. A screenshot lands in `test-artifacts/`.
Set WORKBENCH_SKIP_BROWSER=1 to skip; otherwise a missing Chromium fails with the fix.
"""

from __future__ import annotations

import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import json

import httpx
import pytest

pytestmark = [pytest.mark.browser, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
CHROMIUM = "/usr/bin/chromium"
ARTIFACTS = REPO / "test-artifacts"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]

# User settings for the temp Lab: start the notebook's kernel without asking, never fetch news.
_LAB_SETTINGS = {
    "@jupyterlab/notebook-extension/tracker": {"autoStartDefaultKernel": True},
    "@jupyterlab/apputils-extension/notification": {"fetchNews": "false", "checkForUpdates": False},
}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def lab(tmp_path: Path):
    """A JupyterLab server on loopback serving a temp root that holds the test notebook."""
    if os.environ.get("WORKBENCH_SKIP_BROWSER") == "1":
        pytest.skip("WORKBENCH_SKIP_BROWSER=1")
    if not os.access(CHROMIUM, os.X_OK):
        pytest.fail(f"Chromium not found at {CHROMIUM}: install it with `apt-get install -y chromium` "
                    "(or `make setup-browser`), or set WORKBENCH_SKIP_BROWSER=1 to skip this test")
    root = tmp_path / "root"
    root.mkdir()
    shutil.copy(REPO / "notebooks" / "_browser_viewer.ipynb", root / "viewer.ipynb")
    settings = tmp_path / "lab-settings"
    for name, values in _LAB_SETTINGS.items():
        path = settings / f"{name}.jupyterlab-settings"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(values))
    port, token = _free_port(), secrets.token_hex(16)
    env = {**os.environ, "PYTHONPATH": str(REPO), "JUPYTER_CONFIG_DIR": str(tmp_path / "config"),
           "JUPYTER_RUNTIME_DIR": str(tmp_path / "runtime"), "JUPYTER_DATA_DIR": str(tmp_path / "data"),
           "IPYTHONDIR": str(tmp_path / "ipython"), "JUPYTERLAB_SETTINGS_DIR": str(settings),
           "JUPYTERLAB_WORKSPACES_DIR": str(tmp_path / "workspaces")}
    log = open(tmp_path / "lab.log", "w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "jupyterlab", "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}",
         "--ServerApp.port_retries=0", f"--IdentityProvider.token={token}",
         f"--ServerApp.root_dir={root}", "--ServerApp.open_browser=False", "--LabApp.news_url=",
         "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
         "--LabApp.extension_manager=readonly", "--KernelSpecManager.ensure_native_kernel=True",
         *(["--allow-root"] if os.geteuid() == 0 else [])],
        cwd=root, env=env, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + 60
        while True:
            if proc.poll() is not None:
                pytest.fail(f"JupyterLab exited early:\n{(tmp_path / 'lab.log').read_text()[-3000:]}")
            try:
                if httpx.get(f"{base}/api/status", params={"token": token}, timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.time() > deadline:
                pytest.fail(f"JupyterLab did not answer in 60 s:\n{(tmp_path / 'lab.log').read_text()[-3000:]}")
            time.sleep(0.5)
        # Start the notebook's kernel up front, so Lab attaches to it instead of asking which one.
        httpx.post(f"{base}/api/sessions", params={"token": token}, timeout=30, json={
            "path": "viewer.ipynb", "type": "notebook", "name": "viewer.ipynb",
            "kernel": {"name": "python3"}}).raise_for_status()
        yield f"{base}/lab/tree/viewer.ipynb?token={token}"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


def test_viewer_renders_and_steps_in_jupyterlab(lab: str) -> None:
    from playwright.sync_api import TimeoutError as PlaywrightTimeout
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        try:
            page.goto(lab)
            page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=60_000)
            page.wait_for_selector(".jp-Notebook-ExecutionIndicator[data-status='idle']",
                                   timeout=60_000, state="attached")
            try:  # older settings or a slow start can still bring up the kernel picker
                page.locator(".jp-Dialog").get_by_role("button", name="Select").click(timeout=3_000)
            except PlaywrightTimeout:
                pass
            page.get_by_role("menuitem", name="Run", exact=True).click()
            page.get_by_text("Run All Cells", exact=True).click()

            code = page.locator(".wb-viewer .wb-code .wb-code-src")
            code.wait_for(timeout=90_000)
            first = code.inner_text()
            assert "hits_0" in first
            assert page.locator(".wb-viewer .wb-note").count() == 1    # one fact after step 1
            page.get_by_role("button", name="next step ▶").click()
            page.wait_for_function(
                "prev => document.querySelector('.wb-viewer .wb-code .wb-code-src')?.innerText !== prev",
                arg=first, timeout=30_000)
            assert "hits_1" in code.inner_text()
            assert page.locator(".wb-viewer .wb-note.wb-changed").count() == 1
            page.screenshot(path=str(ARTIFACTS / "browser_viewer.png"), full_page=True)
        except Exception:
            page.screenshot(path=str(ARTIFACTS / "browser_viewer_failure.png"), full_page=True)
            raise
        finally:
            browser.close()

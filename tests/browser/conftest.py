"""The browser the tests here drive: Debian's Chromium through Playwright, one per test.

WORKBENCH_SKIP_BROWSER=1 skips them; otherwise a missing Chromium fails with the fix."""

from __future__ import annotations

import pytest
from browser_lab import ARTIFACTS, CHROMIUM, CHROMIUM_ARGS, require_chromium


@pytest.fixture
def browser():
    require_chromium()
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield b
        finally:
            b.close()

"""access / find_in_page from a sandboxed kernel through a real gateway; in-kernel HTTP by profile."""

from __future__ import annotations

import asyncio

import pytest

from workbench.tools import ToolGateway, ToolRegistry
from workbench.tools.web import web_tools
from workbench.web import HttpFetcher

pytestmark = pytest.mark.slow

KERNEL_CODE = """
first = access(URL)
print(first.splitlines()[0])
print(access(URL, page=2).splitlines()[0])
print(find_in_page(URL, "needle"))
try:
    access(URL, page=99)
except Exception as exc:
    print(type(exc).__name__, exc)
for path in ("/missing", "/pdf", "/loop-a", "/to-private"):
    try:
        access(BASE + path)
    except Exception as exc:
        print(type(exc).__name__, exc)
"""


async def _kernel(profile: str = "default"):
    from workbench.errors import SandboxError
    from workbench.kernel import AsyncKernel

    kernel = AsyncKernel(profile, startup_code="import workbench.runtime")
    try:
        await kernel.start()
    except SandboxError as exc:
        pytest.skip(f"no sandbox here: {exc}")
    return kernel


def test_access_and_find_in_page_from_a_sandboxed_kernel(trouble):
    fetcher = HttpFetcher(allow_hosts=[trouble.removeprefix("http://")], timeout_s=5)
    registry = ToolRegistry(web_tools(fetcher, window_chars=1500))

    async def main():
        kernel = await _kernel()
        try:
            async with ToolGateway(registry, kernel.rollout_dir / "run" / "gateway.sock", rollout_id="web") as gw:
                assert (await kernel.execute(gw.setup_code(), silent=True)).ok
                code = f"URL = {trouble + '/long'!r}\nBASE = {trouble!r}\n" + KERNEL_CODE
                obs = await kernel.execute(code, timeout=60)
                assert obs.ok, obs.text
                lines = obs.text.splitlines()
                n = int(lines[0].split("/")[1].split()[0])
                assert lines[0] == f">>>> Page 1/{n} >>>>" and n > 2
                assert lines[1] == f">>>> Page 2/{n} >>>>"
                assert f"1 match for 'needle' in {trouble}/long:" in obs.text
                assert "The needle is here." in obs.text
                assert f"page 99 is out of range: {trouble}/long has {n} pages (use page=1..{n})" in obs.text
                assert "HTTP 404 (the page does not exist" in obs.text
                assert "it is application/pdf, not an HTML page" in obs.text
                assert "redirect loop" in obs.text
                assert "refused http://10.1.2.3/secret" in obs.text
                calls = gw.take_calls()
                assert [c.name for c in calls] == ["access", "access", "find_in_page", "access"] + ["access"] * 4
                assert all(c.duration_s > 0 for c in calls)
                assert [c.error is None for c in calls] == [True, True, True] + [False] * 5
        finally:
            await kernel.close()
            fetcher.close()

    asyncio.run(main())


PROBE = """
import urllib.request
try:
    print("OK", len(urllib.request.urlopen(SITE, timeout=5).read()))
except OSError as exc:
    print("OSError", type(exc).__name__)
"""


@pytest.mark.parametrize("profile, expected", [("default", "OSError"), ("networked", "OK")])
def test_in_kernel_http_is_refused_under_the_default_profile(trouble, profile, expected):
    async def main():
        kernel = await _kernel(profile)
        try:
            obs = await kernel.execute(f"SITE = {trouble + '/ok'!r}\n" + PROBE, timeout=30)
            assert obs.text.split()[0] == expected, obs.text
        finally:
            await kernel.close()

    asyncio.run(main())

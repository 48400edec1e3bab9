"""Tool factories the cluster tests name in `ToolsSpec` (workers import them from the repo root)."""

from __future__ import annotations

import hashlib

from workbench.tools import ToolRegistry

SECRET_VAR = "WORKBENCH_TEST_TOOL_KEY"
SECRET = "sk-test-6b1f0c2e9d"  # what the workers' environment holds; never sent by the driver


def keyed_tools(api_key: str) -> ToolRegistry:
    """A `lookup` tool that needs a credential: it answers with a digest proving it holds one."""

    def lookup(query: str) -> str:
        """Look `query` up in a keyed service."""
        return f"{query}: ok (key digest {hashlib.sha256(api_key.encode()).hexdigest()[:12]})"

    return ToolRegistry([lookup])

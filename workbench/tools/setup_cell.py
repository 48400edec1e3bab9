"""The cells the host runs in a rollout's kernel: install the runtime, read the notepad back.

    code = setup_code(registry, token=gateway.token)     # or gateway.setup_code()
    await kernel.execute(code, silent=True)              # once, when the rollout acquires the kernel

The notepad reaches the host by itself (pushed to the gateway on every edit: `gateway.notepad`).
To ask the kernel anyway, evaluate `SNAPSHOT_EXPRESSION` as a Jupyter user expression and decode
the reply with `snapshot_from_user_expression`.
"""

from __future__ import annotations

import ast
import json
from typing import Any

from workbench.errors import KernelError
from workbench.tools.registry import ToolRegistry

SNAPSHOT_EXPRESSION = "__import__('workbench.runtime', fromlist=['snapshot_json']).snapshot_json()"
"""A Jupyter user expression giving the kernel's notepad snapshot (decode with `snapshot_from_user_expression`)."""


def setup_code(
    registry: ToolRegistry, *, token: str, socket_path: str | None = None, call_timeout_s: float = 30.0
) -> str:
    """Python source that installs `notepad`, the tool stubs and `submit_final_answer`.

    It binds no other names and prints nothing. `socket_path=None` means the kernel's
    $WORKBENCH_GATEWAY (/run/workbench/gateway.sock inside the sandbox).
    """
    specs = json.dumps(registry.specs(), ensure_ascii=False)
    return (
        "__import__('workbench.runtime', fromlist=['install']).install(\n"
        f"    globals(), __import__('json').loads({specs!r}),\n"
        f"    socket_path={socket_path!r}, token={token!r}, timeout_s={call_timeout_s + 5.0!r});\n"
    )


def snapshot_from_user_expression(reply: dict[str, Any]) -> dict[str, Any] | None:
    """Decode `{"status": "ok", "data": {"text/plain": ...}}` for SNAPSHOT_EXPRESSION."""
    if reply.get("status") != "ok":
        raise KernelError(
            f"notepad snapshot expression failed: {reply.get('ename')}: "
            f"{reply.get('evalue')}; was the setup cell run in this kernel?"
        )
    snapshot: dict[str, Any] | None = json.loads(ast.literal_eval(reply["data"]["text/plain"]))
    return snapshot

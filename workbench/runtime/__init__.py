"""The in-kernel runtime: `notepad` and tool stubs that call the host's gateway.

Runs inside every sandboxed kernel, so it is stdlib only and imports in about a millisecond
(heavier stdlib modules load on first use). The host's setup cell (`workbench.tools.setup_code`)
calls `install(globals(), specs, token=...)`; the model then sees `notepad`, one function per
host tool, and `submit_final_answer`. `workbench.runtime.fork` is the kernel side of
`kernel.fork(n)` (its `save` imports cloudpickle when it runs; nothing here imports it earlier).
"""

from workbench.runtime.bridge import install, snapshot_json
from workbench.runtime.client import GatewayClient, ToolCallError
from workbench.runtime.notepad import NOTEPAD_API, Notepad, NotepadError


def notepad_api_doc() -> str:
    """The notepad's API as the system prompt shows it."""
    return NOTEPAD_API


__all__ = [
    "NOTEPAD_API",
    "GatewayClient",
    "Notepad",
    "NotepadError",
    "ToolCallError",
    "install",
    "notepad_api_doc",
    "snapshot_json",
]

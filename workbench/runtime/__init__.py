"""The in-kernel runtime: `notepad` and tool stubs that call the host's gateway.

Runs inside every sandboxed kernel, so it is stdlib only and imports in about a millisecond
(heavier stdlib modules load on first use). The host's setup cell (`workbench.tools.setup_code`)
calls `install(globals(), specs, token=...)`; the model then sees `notepad`, one function per
host tool, and `submit_final_answer`.
"""

from workbench.runtime.bridge import current_notepad, install, push_error, snapshot_json
from workbench.runtime.client import GatewayClient, ToolArgumentError, ToolCallError
from workbench.runtime.notepad import NOTEPAD_API, STATUSES, Notepad, NotepadError, Todo
from workbench.runtime.stubs import FINAL_ANSWER_SPEC, make_stub


def notepad_api_doc() -> str:
    """The notepad's API as the system prompt shows it."""
    return NOTEPAD_API


__all__ = [
    "FINAL_ANSWER_SPEC",
    "NOTEPAD_API",
    "STATUSES",
    "GatewayClient",
    "Notepad",
    "NotepadError",
    "Todo",
    "ToolArgumentError",
    "ToolCallError",
    "current_notepad",
    "install",
    "make_stub",
    "notepad_api_doc",
    "push_error",
    "snapshot_json",
]

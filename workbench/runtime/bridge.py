"""`install`: what the setup cell runs in a fresh kernel, and how the notepad reaches the host.

    install(globals(), specs, token="…")     # workbench.tools.setup_code(...) writes this call
    search("capital of France", top_k=2)     # a stub: runs `search` on the host
    notepad.add_fact("Paris is in France")   # the host sees it in gateway.notepad
    submit_final_answer("Paris")             # prints "Final answer submitted: Paris"

Notepad snapshots are pushed to the gateway, so the host never has to ask the kernel. Under
IPython one push happens after each cell that changed the notepad (a `post_execute` hook, which
runs before the execute reply is sent); elsewhere every edit is pushed. `snapshot_json()` is the
fallback for asking anyway.
"""

from __future__ import annotations

from workbench.runtime.client import GatewayClient, ToolArgumentError, ToolCallError
from workbench.runtime.notepad import Notepad, NotepadError
from workbench.runtime.stubs import FINAL_ANSWER_SPEC, make_stub
from workbench.safetext import safe_json

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, TypedDict

    from workbench.runtime.stubs import ToolSpec

    class _State(TypedDict):
        notepad: Notepad | None
        push_error: str | None
        hook: Callable[[], None] | None
        dirty: bool
        stubs: dict[str, Callable[..., Any]]


_STATE: _State = {"notepad": None, "push_error": None, "hook": None, "dirty": False, "stubs": {}}


def _ipython_shell() -> Any:
    import sys

    module = sys.modules.get("IPython")  # never imported here: present only inside a kernel
    return module.get_ipython() if module is not None else None


def install(
    namespace: dict[str, Any],
    specs: list[ToolSpec],
    *,
    socket_path: str | None = None,
    token: str | None = None,
    timeout_s: float = 60.0,
    push_notepad: bool = True,
) -> Notepad:
    """Put `notepad`, one stub per tool spec and `submit_final_answer` into `namespace`.

    `socket_path` defaults to $WORKBENCH_GATEWAY. With `push_notepad`, notepad changes are sent
    to the gateway (see the module doc); a failed push never disturbs the model's code, and
    `push_error()` says why it failed.
    """
    client = GatewayClient(socket_path, token, timeout_s)
    shell = _ipython_shell()

    def push(snapshot: dict[str, Any]) -> None:
        try:
            reply = client.request({"op": "notepad", "snapshot": safe_json(snapshot)})
            _STATE["push_error"] = None if reply.get("ok") else reply.get("error")
        except Exception as exc:
            _STATE["push_error"] = str(exc) if isinstance(exc, ToolCallError) else repr(exc)

    def mark_dirty(snapshot: dict[str, Any]) -> None:
        _STATE["dirty"] = True

    def push_if_dirty() -> None:
        if _STATE["dirty"] and _STATE["notepad"] is pad:
            _STATE["dirty"] = False
            push(pad.snapshot())

    on_change = None if not push_notepad else (mark_dirty if shell is not None else push)
    pad = Notepad(on_change=on_change)
    namespace["notepad"] = pad
    if not any(s.get("final") for s in specs):
        specs = [*specs, FINAL_ANSWER_SPEC]
    stubs = {spec["name"]: make_stub(spec, client) for spec in specs}
    namespace.update(stubs)
    if shell is not None:
        if _STATE["hook"] is not None:  # installed before in this kernel: replace
            shell.events.unregister("post_execute", _STATE["hook"])
        shell.events.register("post_execute", push_if_dirty)
        _trim_tracebacks(shell)
    hook = push_if_dirty if shell is not None else None
    _STATE.update({"notepad": pad, "push_error": None, "dirty": False, "hook": hook, "stubs": stubs})
    return pad


def _trim_tracebacks(shell: Any) -> None:
    """Leave workbench.runtime's own frames out of tool and notepad tracebacks, so the model
    reads its cell line and the message, not our internals."""

    def handler(self: Any, etype: type, value: BaseException, tb: Any, tb_offset: Any = None) -> Any:
        kept = []
        while tb is not None:
            if not str(tb.tb_frame.f_globals.get("__name__", "")).startswith("workbench.runtime"):
                kept.append(tb)
            tb = tb.tb_next
        for a, b in zip(kept, [*kept[1:], None], strict=True):
            a.tb_next = b
        self.showtraceback((etype, value, kept[0] if kept else None), tb_offset=tb_offset)

    shell.set_custom_exc((ToolCallError, ToolArgumentError, NotepadError), handler)


def current_notepad() -> Notepad | None:
    """The notepad `install` created (even if the model rebound the name `notepad`)."""
    return _STATE["notepad"]


def installed_stubs() -> dict[str, Callable[..., Any]]:
    """The tool stubs `install` made, by tool name."""
    return dict(_STATE["stubs"])


def restore_notepad(data: dict[str, Any]) -> Notepad:
    """A forked kernel's notepad: the installed one given `data`'s contents (and pushed to the
    host), or, with none installed, a new one that becomes current."""
    copy = Notepad.from_snapshot(data)
    pad = _STATE["notepad"]
    if pad is None:
        _STATE["notepad"] = copy
        return copy
    pad._take_contents(copy)
    push_now()
    return pad


def push_now() -> None:
    """Push the notepad to the host if it changed: a silent cell runs no post_execute hook."""
    if _STATE["hook"] is not None:
        _STATE["hook"]()


def snapshot_json() -> str:
    """The installed notepad's snapshot as JSON ("null" before `install`)."""
    import json

    pad = _STATE["notepad"]
    return json.dumps(safe_json(pad.snapshot()) if pad is not None else None)


def push_error() -> str | None:
    """Why the last notepad push failed, or None."""
    return _STATE["push_error"]

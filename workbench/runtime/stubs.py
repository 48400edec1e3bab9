"""Tool stubs and `install`: what the setup cell puts into the kernel's namespace.

A stub is a plain function with the host tool's real signature and docstring (so `help(search)`
and `inspect.signature(search)` work). Calling it checks the arguments locally, as a normal
function would (`ToolArgumentError`, a TypeError), sends them to the host gateway, and returns
the host's result or raises `ToolCallError` with the host's message. Under IPython, tracebacks
of these errors leave out the runtime's own frames: the model sees its line and the message.

    install(globals(), specs, token="…")     # what workbench's setup cell runs
    search("capital of France", top_k=2)     # → "Doc 1 (Title: Paris) …"
    submit_final_answer("Paris")             # prints "Final answer submitted: Paris"

The host learns of every notepad edit: the notepad pushes its snapshot to the gateway after each
change, so the host never has to ask. `snapshot_json()` is the fallback for asking anyway.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable

from workbench.runtime.client import GatewayClient, ToolArgumentError, ToolCallError
from workbench.runtime.notepad import Notepad

FINAL_ANSWER_SPEC: dict[str, Any] = {
    "name": "submit_final_answer",
    "doc": "Submit your final answer; this ends the episode. Non-str answers are converted with str().",
    "parameters": [{"name": "answer", "kind": "POSITIONAL_OR_KEYWORD", "annotation": "str"}],
    "returns": "None",
    "final": True,
}
_TYPES = {t.__name__: t for t in (str, int, float, bool, list, dict, tuple, set, bytes, object)}
_TYPES["None"] = None
_STATE: dict[str, Any] = {"notepad": None, "client": None, "push_error": None}


def _annotation(text: Any) -> Any:
    """'list[str]' → list[str] when it names builtins only; anything else stays a string."""
    import inspect

    if text is None or text == "":
        return inspect.Parameter.empty
    try:
        return eval(str(text), {"__builtins__": {}}, _TYPES)  # host-written spec, builtins only
    except Exception:
        return str(text)


def _signature(spec: dict[str, Any]) -> Any:
    import inspect

    params = []
    for p in spec.get("parameters", []):
        kind = getattr(inspect.Parameter, p.get("kind", "POSITIONAL_OR_KEYWORD"))
        default = p["default"] if "default" in p else inspect.Parameter.empty
        params.append(inspect.Parameter(p["name"], kind, default=default,
                                        annotation=_annotation(p.get("annotation"))))
    returns = _annotation(spec.get("returns"))
    return inspect.Signature(params, return_annotation=returns)


def make_stub(spec: dict[str, Any], client: GatewayClient) -> Callable[..., Any]:
    """Build the kernel-side function for one tool spec (see `workbench.tools.Tool.spec`)."""
    import json

    name = spec["name"]
    final = bool(spec.get("final"))
    signature = _signature(dict(spec, returns="None") if final else spec)

    def stub(*args: Any, **kwargs: Any) -> Any:
        try:
            signature.bind(*args, **kwargs)
        except TypeError as exc:
            raise ToolArgumentError(f"{name}() {exc}") from None
        if final:
            args = tuple(a if isinstance(a, str) else str(a) for a in args)
            kwargs = {k: v if isinstance(v, str) else str(v) for k, v in kwargs.items()}
        for key, value in [*enumerate(args), *kwargs.items()]:
            try:
                json.dumps(value)
            except (TypeError, ValueError):
                raise ToolArgumentError(f"{name}() argument {key!r} is a {type(value).__name__}; tools take "
                                "JSON values (str, int, float, bool, None, list, dict)") from None
        reply = client.request({"op": "call", "tool": name, "args": list(args), "kwargs": kwargs})
        if not reply.get("ok"):
            raise ToolCallError(str(reply.get("error", "the tool failed")), tool=name)
        if final:
            print(reply.get("result"))
            return None
        return reply.get("result")

    stub.__name__ = stub.__qualname__ = name
    stub.__doc__ = spec.get("doc") or None
    stub.__module__ = "tools"
    stub.__signature__ = signature  # type: ignore[attr-defined]
    return stub


def install(namespace: dict[str, Any], specs: list[dict[str, Any]], *, socket_path: str | None = None,
            token: str | None = None, timeout_s: float = 60.0, push_notepad: bool = True) -> Notepad:
    """Put `notepad`, one stub per tool spec and `submit_final_answer` into `namespace`.

    `socket_path` defaults to $WORKBENCH_GATEWAY. With `push_notepad`, every notepad edit sends
    the snapshot to the gateway (a failed push never disturbs the model's code; see `push_error`).
    """
    client = GatewayClient(socket_path, token, timeout_s)

    def push(snapshot: dict[str, Any]) -> None:
        try:
            reply = client.request({"op": "notepad", "snapshot": snapshot})
            _STATE["push_error"] = None if reply.get("ok") else reply.get("error")
        except ToolCallError as exc:
            _STATE["push_error"] = str(exc)

    pad = Notepad(on_change=push if push_notepad else None)
    namespace["notepad"] = pad
    if not any(s.get("final") for s in specs):
        specs = [*specs, FINAL_ANSWER_SPEC]
    for spec in specs:
        namespace[spec["name"]] = make_stub(spec, client)
    _STATE.update(notepad=pad, client=client, push_error=None)
    _trim_tracebacks()
    return pad


def _trim_tracebacks() -> None:
    """Under IPython, leave workbench.runtime's own frames out of tool and notepad tracebacks,
    so the model reads its cell line and the message, not our internals."""
    import sys

    from workbench.runtime.notepad import NotepadError

    ipython_mod = sys.modules.get("IPython")  # never imported here: present only in a kernel
    shell = ipython_mod.get_ipython() if ipython_mod is not None else None
    if shell is None:
        return

    def handler(self: Any, etype: type, value: BaseException, tb: Any, tb_offset: Any = None) -> Any:
        kept = []
        while tb is not None:
            if not str(tb.tb_frame.f_globals.get("__name__", "")).startswith("workbench.runtime"):
                kept.append(tb)
            tb = tb.tb_next
        for a, b in zip(kept, kept[1:] + [None]):
            a.tb_next = b
        self.showtraceback((etype, value, kept[0] if kept else None), tb_offset=tb_offset)

    shell.set_custom_exc((ToolCallError, ToolArgumentError, NotepadError), handler)


def current_notepad() -> Notepad | None:
    """The notepad `install` created (even if the model rebound the name `notepad`)."""
    return _STATE["notepad"]


def snapshot_json() -> str:
    """The installed notepad's snapshot as JSON ("null" before `install`)."""
    import json

    pad = _STATE["notepad"]
    return json.dumps(pad.snapshot() if pad is not None else None)


def push_error() -> str | None:
    """Why the last notepad push failed, or None."""
    return _STATE["push_error"]

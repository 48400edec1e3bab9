"""Tool stubs: kernel-side functions that call host tools through the gateway.

A stub is a plain function with the host tool's real signature and docstring (so `help(search)`
and `inspect.signature(search)` work). Calling it checks the arguments locally, as a normal
function would (`ToolArgumentError`, a TypeError), sends them to the host gateway, and returns
the host's result or raises `ToolCallError` with the host's message. Under IPython, tracebacks
of these errors leave out the runtime's own frames: the model sees its line and the message.

    search = make_stub(spec, GatewayClient(token="…"))   # `install` does this for every spec
    search("capital of France", top_k=2)                  # → "Doc 1 (Title: Paris) …"
"""

from __future__ import annotations

from workbench.runtime.client import GatewayClient, ToolArgumentError, ToolCallError

TYPE_CHECKING = False
if TYPE_CHECKING:
    import inspect
    from collections.abc import Callable
    from typing import Any, NotRequired, Required, TypedDict

    class ParameterSpec(TypedDict):
        """One parameter of a tool: `kind` is an `inspect.Parameter` kind's name."""

        name: str
        kind: NotRequired[str]
        annotation: NotRequired[str]
        default: NotRequired[Any]

    class ToolSpec(TypedDict, total=False):
        """A tool as JSON (`workbench.tools.Tool.spec`): what `make_stub` builds a function from."""

        name: Required[str]
        doc: str
        parameters: list[ParameterSpec]
        returns: str
        final: bool


FINAL_ANSWER_SPEC: ToolSpec = {
    "name": "submit_final_answer",
    "doc": "Submit your final answer; this ends the episode. Non-str answers are converted with str().",
    "parameters": [{"name": "answer", "kind": "POSITIONAL_OR_KEYWORD", "annotation": "str"}],
    "returns": "None",
    "final": True,
}
_TYPES: dict[str, type | None] = {t.__name__: t for t in (str, int, float, bool, list, dict, tuple, set, bytes, object)}
_TYPES["None"] = None


def _annotation(text: object) -> object:
    """'list[str]' → list[str] when it names builtins only; anything else stays a string."""
    import inspect

    if text is None or text == "":
        return inspect.Parameter.empty
    try:
        return eval(str(text), {"__builtins__": {}}, _TYPES)  # host-written spec, builtins only
    except Exception:
        return str(text)


def _signature(spec: ToolSpec) -> inspect.Signature:
    import inspect

    params = []
    for p in spec.get("parameters", []):
        kind = getattr(inspect.Parameter, p.get("kind", "POSITIONAL_OR_KEYWORD"))
        default = p["default"] if "default" in p else inspect.Parameter.empty
        params.append(inspect.Parameter(p["name"], kind, default=default, annotation=_annotation(p.get("annotation"))))
    returns = _annotation(spec.get("returns"))
    return inspect.Signature(params, return_annotation=returns)


def make_stub(spec: ToolSpec, client: GatewayClient) -> Callable[..., Any]:
    """Build the kernel-side function for one tool spec (see `workbench.tools.Tool.spec`)."""
    import json

    name = spec["name"]
    final = bool(spec.get("final"))
    signature = _signature({**spec, "returns": "None"} if final else spec)

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
                raise ToolArgumentError(
                    f"{name}() argument {key!r} is a {type(value).__name__}; tools take "
                    "JSON values (str, int, float, bool, None, list, dict)"
                ) from None
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
    stub.__signature__ = signature  # type: ignore[attr-defined]  # read by inspect.signature; typeshed has no such attribute
    return stub

"""Host tools: `@tool` turns a typed, documented function into a `Tool`; `ToolRegistry` holds them.

    from workbench.tools import ToolRegistry, tool

    @tool
    def lookup(entity: str, field: str = "birthplace") -> str:
        '''Look up one field of an entity in the knowledge base.'''
        return kb[entity][field]

    registry = ToolRegistry([lookup])          # submit_final_answer is always included
    print(registry.prompt_text())              # signatures + docstrings for the system prompt
    registry.specs()                           # JSON specs the in-kernel runtime builds stubs from

Tools run on the host (sync ones in a thread, async ones on the gateway's loop); the kernel
only holds stubs, so clients and secrets never enter the sandbox.
"""

from __future__ import annotations

import inspect
import json
import keyword
import reprlib
import typing
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, overload

from workbench.errors import ConfigError, ToolError

if TYPE_CHECKING:
    from workbench.runtime.stubs import ParameterSpec, ToolSpec

_REPR = reprlib.Repr()
_REPR.maxstring = _REPR.maxother = 80
RESERVED_NAMES = frozenset({"notepad", "print", "help"})
_SCALARS = {str: "str", int: "int", float: "float", bool: "bool", list: "list", dict: "dict"}


def format_annotation(annotation: Any) -> str:
    """`str`, `list[str]`, `int | None` … as written in source, without `typing.` prefixes."""
    if annotation is inspect.Parameter.empty:
        return ""
    if annotation is None or annotation is type(None):
        return "None"
    if isinstance(annotation, type) and not typing.get_args(annotation):
        return annotation.__name__
    return inspect.formatannotation(annotation).replace("typing.", "")


@dataclass(frozen=True)
class Tool:
    """A host callable the model may call from its kernel. Calling a Tool calls the function."""

    name: str
    fn: Callable[..., Any]
    signature: inspect.Signature
    doc: str
    final: bool = False  # calling it submits the episode's final answer
    is_async: bool = field(default=False)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.fn(*args, **kwargs)

    def spec(self) -> ToolSpec:
        """The JSON spec the runtime turns into a stub (name, doc, parameters, returns, final)."""
        params = []
        for p in self.signature.parameters.values():
            entry: ParameterSpec = {"name": p.name, "kind": p.kind.name, "annotation": format_annotation(p.annotation)}
            if p.default is not inspect.Parameter.empty:
                entry["default"] = p.default
            params.append(entry)
        return {
            "name": self.name,
            "doc": self.doc,
            "parameters": params,
            "returns": format_annotation(self.signature.return_annotation),
            "final": self.final,
        }

    def prompt_text(self) -> str:
        """`name(signature)` then the docstring, indented."""
        params = []
        for p in self.signature.parameters.values():
            text = p.name
            if p.annotation is not inspect.Parameter.empty:
                text += f": {format_annotation(p.annotation)}"
            if p.default is not inspect.Parameter.empty:
                text += f" = {p.default!r}"
            params.append(text)
        ret = self.signature.return_annotation
        head = f"{self.name}({', '.join(params)})"
        if ret is not inspect.Signature.empty:
            head += f" -> {format_annotation(ret)}"
        body = "\n".join("    " + line if line else "" for line in self.doc.splitlines())
        return f"{head}\n{body}"

    def bind(self, args: list[Any], kwargs: dict[str, Any]) -> dict[str, Any]:
        """Check a call against the signature and annotations; returns all arguments by name."""
        try:
            bound = self.signature.bind(*args, **kwargs)
        except TypeError as exc:
            raise ToolError(f"{self.name}() {exc}; signature: {self.name}{self.signature}") from None
        bound.apply_defaults()
        for name, value in bound.arguments.items():
            expected = self.signature.parameters[name].annotation
            if isinstance(expected, type) and expected in _SCALARS and not _matches(value, expected):
                raise ToolError(
                    f"{self.name}() argument {name!r} must be {_SCALARS[expected]}, "
                    f"got {type(value).__name__}: {_short_repr(value)}"
                )
        return dict(bound.arguments)


def _short_repr(value: Any) -> str:
    """At most about 80 characters of repr, without building the whole repr of a big value."""
    return _REPR.repr(value)


def _matches(value: Any, expected: type) -> bool:
    if expected is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if expected is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, expected)


def make_tool(fn: Callable[..., Any], *, name: str | None = None, final: bool = False) -> Tool:
    """Validate `fn` (named, documented, annotated, JSON-able defaults) and wrap it as a Tool."""
    if isinstance(fn, Tool):
        return fn
    if not callable(fn):
        raise ConfigError(f"a tool must be a function, got {type(fn).__name__}")
    name = name or str(getattr(fn, "__name__", ""))
    if not name.isidentifier() or keyword.iskeyword(name) or name.startswith("_"):
        raise ConfigError(f"tool name {name!r} is not a public Python identifier; pass name='my_tool'")
    if name in RESERVED_NAMES:
        raise ConfigError(f"tool name {name!r} is reserved in the kernel; pass another name=")
    doc = inspect.getdoc(fn)
    if not doc:
        raise ConfigError(
            f"tool {name!r} has no docstring; the model only knows a tool by its signature and docstring, so write one"
        )
    signature = inspect.signature(fn)
    try:
        hints = typing.get_type_hints(fn)
    except Exception:  # unresolvable forward references: keep the raw annotations
        hints = {}
    params = []
    for p in signature.parameters.values():
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD, p.POSITIONAL_ONLY):
            raise ConfigError(
                f"tool {name!r}: parameter {p.name!r} is {p.kind.description}; tools "
                "take plain named parameters (drop the *, ** or /)"
            )
        annotation = hints.get(p.name, p.annotation)
        if annotation is inspect.Parameter.empty:
            raise ConfigError(
                f"tool {name!r}: parameter {p.name!r} has no type annotation; add one "
                "(e.g. `query: str`) so the model sees the type"
            )
        if p.default is not inspect.Parameter.empty:
            try:
                json.dumps(p.default)
            except (TypeError, ValueError):
                raise ConfigError(
                    f"tool {name!r}: the default of {p.name!r} is not JSON-able; "
                    "use None, a number, a str, a list or a dict"
                ) from None
        params.append(p.replace(annotation=annotation))
    returns = hints.get("return", signature.return_annotation)
    signature = signature.replace(parameters=params, return_annotation=returns)
    return Tool(name=name, fn=fn, signature=signature, doc=doc, final=final, is_async=inspect.iscoroutinefunction(fn))


@overload
def tool(fn: Callable[..., Any], *, name: str | None = None, final: bool = False) -> Tool: ...
@overload
def tool(fn: None = None, *, name: str | None = None, final: bool = False) -> Callable[[Callable[..., Any]], Tool]: ...
def tool(
    fn: Callable[..., Any] | None = None, *, name: str | None = None, final: bool = False
) -> Tool | Callable[[Callable[..., Any]], Tool]:
    """Decorator: `@tool` or `@tool(name="search_web")` turns a function into a `Tool`."""
    if fn is None:
        return lambda f: make_tool(f, name=name, final=final)
    return make_tool(fn, name=name, final=final)


def _submit_final_answer(answer: str) -> str:
    """Submit your final answer; this ends the episode. Call it once, with the answer only."""
    return f"Final answer submitted: {answer}"


# Defined here, beside the registry that adds it by default (workbench.tools.builtins re-exports it).
submit_final_answer: Tool = make_tool(_submit_final_answer, name="submit_final_answer", final=True)


class ToolRegistry:
    """The tools one rollout may call. `submit_final_answer` is added unless `final_answer=False`."""

    def __init__(self, tools: Iterable[Callable[..., Any] | Tool] = (), *, final_answer: bool = True) -> None:
        self._tools: dict[str, Tool] = {}
        for t in tools:
            self.register(t)
        if final_answer and not any(t.final for t in self._tools.values()):
            self.register(submit_final_answer)

    def register(self, fn: Callable[..., Any] | Tool, *, name: str | None = None, final: bool = False) -> Tool:
        """Add a function or Tool; returns the Tool. Names must be unique."""
        t = make_tool(fn, name=name, final=final)
        if t.name in self._tools:
            raise ConfigError(f"a tool named {t.name!r} is already registered; pass name= to rename")
        self._tools[t.name] = t
        return t

    def get(self, name: str) -> Tool:
        try:
            return self._tools[name]
        except (KeyError, TypeError):
            raise ToolError(
                f"unknown tool {str(name)[:80]!r}; available tools: {', '.join(self._tools) or 'none'}"
            ) from None

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __iter__(self) -> Iterator[Tool]:
        return iter(self._tools.values())

    def __len__(self) -> int:
        return len(self._tools)

    @property
    def names(self) -> list[str]:
        return list(self._tools)

    def specs(self) -> list[ToolSpec]:
        """JSON specs for `workbench.runtime.install`."""
        return [t.spec() for t in self._tools.values()]

    def prompt_text(self) -> str:
        """Every tool's signature and docstring, for the system prompt."""
        return "\n\n".join(t.prompt_text() for t in self._tools.values())

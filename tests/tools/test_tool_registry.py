"""@tool and ToolRegistry: specs, prompt text, argument checks, and registration errors."""

import asyncio
import inspect

import pytest

from workbench.errors import ConfigError, ToolError
from workbench.tools import InMemoryRetriever, ToolRegistry, format_hits, search_tool, tool
from workbench.tools.builtins import tool_text


def test_registry_always_has_submit_final_answer(registry):
    assert registry.names[-1] == "submit_final_answer" and registry.get("submit_final_answer").final
    assert "submit_final_answer" not in ToolRegistry(final_answer=False)


def test_spec_and_prompt_text(registry):
    spec = {s["name"]: s for s in registry.specs()}["add"]
    assert spec == {
        "name": "add",
        "doc": "Add two integers.",
        "returns": "int",
        "final": False,
        "parameters": [
            {"name": "a", "kind": "POSITIONAL_OR_KEYWORD", "annotation": "int"},
            {"name": "b", "kind": "POSITIONAL_OR_KEYWORD", "annotation": "int", "default": 1},
        ],
    }
    text = registry.prompt_text()
    assert "add(a: int, b: int = 1) -> int\n    Add two integers." in text
    assert "search(query: str, top_k: int = 3) -> str" in text
    assert registry.get("async_echo").is_async


def test_bind_checks_signature_and_scalar_types(registry):
    add = registry.get("add")
    assert add.bind([2], {}) == {"a": 2, "b": 1}
    with pytest.raises(ToolError, match=r"add\(\) missing a required argument: 'a'"):
        add.bind([], {})
    with pytest.raises(ToolError, match="unexpected keyword argument 'c'"):
        add.bind([1], {"c": 2})
    with pytest.raises(ToolError, match="argument 'a' must be int, got str"):
        add.bind(["1"], {})
    with pytest.raises(ToolError, match="must be int, got bool"):
        add.bind([True], {})
    assert registry.get("nap").bind([1], {}) == {"seconds": 1}  # int is fine for float


def test_unknown_tool_names_the_available_ones(registry):
    with pytest.raises(ToolError, match="unknown tool 'serch'; available tools: search, add"):
        registry.get("serch")


def undocumented(x: int) -> int:
    return x


def unannotated(x):
    """Doc."""


def star(*xs: int) -> int:
    """Doc."""


def bad_default(x: set = frozenset()) -> None:
    """Doc."""


@pytest.mark.parametrize(
    "fn, message",
    [
        (undocumented, "has no docstring"),
        (unannotated, "has no type annotation"),
        (star, "tools take plain named parameters"),
        (bad_default, "not JSON-able"),
    ],
)
def test_registration_errors(fn, message):
    with pytest.raises(ConfigError, match=message):
        tool(fn)


def test_reserved_and_duplicate_names(registry):
    with pytest.raises(ConfigError, match="reserved"):
        tool(name="notepad")(lambda: None)
    with pytest.raises(ConfigError, match="already registered"):
        registry.register(registry.get("add"))


def test_string_annotations_resolve():
    @tool
    def f(x: "list[str]", y: "int | None" = None) -> "str":
        """Doc."""
        return ""

    assert [p["annotation"] for p in f.spec()["parameters"]] == ["list[str]", "int | None"]
    assert inspect.signature(f.fn).parameters["x"].annotation == "list[str]"


def test_search_accepts_both_retriever_protocols():
    retriever = InMemoryRetriever([("Paris", "Paris is the capital of France."), "Berlin is in Germany."])

    class OnlySearch:
        def search(self, query, top_k):
            return retriever.search(query, top_k)

    class OnlyRetrieve:
        def retrieve(self, queries, top_k):
            return retriever.retrieve(queries, top_k)

    for backend in (OnlySearch(), OnlyRetrieve()):
        assert search_tool(backend)("capital of France", top_k=1) == (
            "Doc 1 (Title: Paris) Paris is the capital of France."
        )
    with pytest.raises(ConfigError, match="neither retrieve"):
        search_tool(object())
    with pytest.raises(ToolError, match="top_k must be between 1 and 10"):
        search_tool(retriever)("x", top_k=50)


def test_tool_text_handles_dicts_and_search_r1_rows():
    rows = [{"title": "A", "text": "alpha "}, {"document": {"contents": '"B"\nbeta'}, "score": 1.0}]
    assert tool_text(rows) == "Doc 1 (Title: A) alpha\nDoc 2 (Title: B) beta"
    assert tool_text([]) == "No results."
    # the same hits in the one formatter's other styles
    assert format_hits(rows) == "Doc 1 (Title: A)\nalpha \n\nDoc 2 (Title: B)\nbeta"
    assert format_hits(rows, "search_r1", template="{title}:{score}", sep=",") == "A:0.0,B:1.0"


def test_async_retriever_gives_async_tool():
    class AsyncRetriever:
        async def retrieve(self, queries, top_k):
            return [[{"title": "T", "text": q}] for q in queries]

    t = search_tool(AsyncRetriever())
    assert t.is_async
    assert asyncio.run(t("hello", 1)) == "Doc 1 (Title: T) hello"

"""The architecture as data: the layer table, lowest first, and no import that points up it or goes round in a cycle.

A module may import its own layer and the layers below. The table is the README's "## Layout" table (a test
below holds them equal). Imports are read from the source of every module under `workbench/` with `ast`;
each kind counts, for layers and for cycles alike:

- top: at module level (also inside `try`/`if`), run when the module loads;
- lazy: inside a function, run when it is called (a cycle through one fails at run time, not import time);
- typing: under `if TYPE_CHECKING:`, never run, but the code's types still depend on the module;
- dynamic: a string naming a workbench module, `"workbench.x.y"` or `"workbench.x.y:attr"`, as
  `importlib.import_module`, a lazy `__getattr__` or a `ToolsSpec` gets it (not the module's own
  package: that one is loaded before the module, and such strings anchor resources).

A package is `workbench.<first name>`; a module's cycles are checked between modules, its layer through
its package. The root `workbench/__init__.py` is the public face: it re-exports lazily from any layer,
and importing it (`import workbench`, done by every submodule import anyway) loads nothing.
"""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from source_tree import parse_file

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "workbench"

# Lowest first: (folders and modules of the row, what they hold). README.md's "## Layout" shows this table.
LAYERS: list[tuple[tuple[str, ...], str]] = [
    (
        (
            "errors.py",
            "registrations.py",
            "safetext.py",
            "console.py",
            "children.py",
            "blocking.py",
            "webio.py",
            "configfile.py",
            "config_args.py",
            "importing.py",
            "_lazy.py",
            "passages.py",
            "templates.py",
            "allocator.py",
            "figures.py",
            "shipped.py",
        ),
        "the error tree, safe text, quiet exits into closed pipes, child processes, blocking calls, HTTP bodies,"
        " config files, MODULE:NAME specs, lazy exports, passages, prompt templates, tcmalloc for entry points,"
        " figure records, the shipped profile and kernelspec folders",
    ),
    (("trajectory.py", "contracts.py", "store/"), "trajectory schema, the Protocols several layers implement, store"),
    (("sandbox/",), "bubblewrap profiles, limits, cgroups"),
    (("runtime/",), "in-kernel notepad and tool stubs"),
    (("kernel/",), "sandboxed ipykernels, pool, the kernel tour"),
    (("web/",), "fetch, extract, browse"),
    (("tools/",), "tool registry, host gateway, web tools"),
    (("policies/", "models/"), "policy backends, tiny local models"),
    (("search/",), "retrievers, indexes, search server"),
    (("agent/",), "the NB-Agent loop, executors, environments"),
    (("rewards/",), "rewards, RewardSpec, rescoring"),
    (("worlds/",), "synthetic worlds, their sites, QA loaders, scripted solvers"),
    (("resolve.py",), "strings to objects: tasks, tool sets, policies, rewards"),
    (("gateway/",), "the model gateway: an OpenAI-compatible server recording a harness's calls"),
    (("envs/",), "NB-Agent under OpenEnv and TRL's environment_factory"),
    (("cluster/",), "Ray executor"),
    (("evaluate/",), "eval harness"),
    (("synth/",), "QA synthesis"),
    (("train/",), "TRL training"),
    (("evolve/",), "proposer/solver self-evolution"),
    (("widgets/",), "dashboards"),
    (("demo/",), "the CPU demo"),
    (("cli/", "__init__.py", "__main__.py"), "the workbench command; the lazy public face"),
]

# (importer, imported) module pairs that may point up or close a cycle, each with its reason. Aim: empty.
# A typing import closes a cycle too (the types of the two modules depend on each other): each one listed
# here is a decision that the two modules are one idea split for length, not a loop between objects.
ALLOWED: dict[tuple[str, str], str] = {
    ("workbench.policies.base", "workbench.policies.sampling"): (
        "typing only: the blocking `generate` helper takes the `LogitControls` that `sampling` builds on `base`"
    ),
    ("workbench.store.export", "workbench.store.store"): (
        "typing only: the export functions take the `Store` whose `export_*` methods call them"
    ),
    ("workbench.kernel.fork", "workbench.kernel.async_kernel"): (
        "typing only: the fork start names the `AsyncKernel`s it starts, as `AsyncKernel.fork` calls it"
    ),
    ("workbench.worlds.questions", "workbench.worlds.world"): (
        "typing only: the question builders walk the `World` that calls them to make its questions"
    ),
    ("workbench.evolve.phases", "workbench.evolve.modes"): (
        "typing only: a phase runs with the `Mode` that `modes` builds over the phases' `Proposed` items"
    ),
}


@dataclass(frozen=True)
class Import:
    source: str  # importing module
    target: str  # imported module
    kind: str  # top | lazy | typing | dynamic
    line: int

    def __str__(self) -> str:
        return f"{self.source}:{self.line} -> {self.target} ({self.kind})"


def module_name(path: Path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}
DYNAMIC = re.compile(r"(workbench(?:\.\w+)+)(?::\w+)?")


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _absolute(module: str, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = module.split(".")
    if MODULES[module].name != "__init__.py":
        base = base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


def imports_of(module: str) -> list[Import]:
    found: list[Import] = []

    def add(target: str, kind: str, line: int) -> None:
        if target.startswith("workbench.") and target in MODULES:
            found.append(Import(module, target, kind, line))

    def visit(node: ast.AST, kind: str) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.body:
                visit(child, "typing")
            for child in node.orelse:
                visit(child, kind)
            return
        if isinstance(node, ast.Import):
            for alias in node.names:
                add(alias.name, kind, node.lineno)
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(module, node)
            for alias in node.names:  # `from pkg import submodule` imports the submodule
                add(f"{base}.{alias.name}" if f"{base}.{alias.name}" in MODULES else base, kind, node.lineno)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            match = DYNAMIC.fullmatch(node.value)
            target = match.group(1) if match else ""
            if match and not f"{module}.".startswith(f"{target}."):  # its own package: loaded already (resources)
                add(target, "dynamic", node.lineno)
        inner = "lazy" if kind == "top" and isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) else kind
        for child in ast.iter_child_nodes(node):
            visit(child, inner)

    visit(parse_file(MODULES[module]), "top")
    return [i for i in found if i.target != i.source]


IMPORTS = [i for module in MODULES for i in imports_of(module)]


def package_of(module: str) -> str:
    """`workbench.agent.loop` -> "agent/", `workbench.trajectory` -> "trajectory.py", `workbench` -> "__init__.py"."""
    parts = module.split(".")
    if len(parts) == 1:
        return "__init__.py"
    return f"{parts[1]}/" if (PACKAGE / parts[1]).is_dir() else f"{parts[1]}.py"


LAYER_OF = {name: rank for rank, (names, _) in enumerate(LAYERS) for name in names}


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one member (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, successors = work[-1]
            for succ in successors:
                if succ not in index:
                    index[succ] = low[succ] = len(index)
                    stack.append(succ)
                    on_stack.add(succ)
                    work.append((succ, iter(sorted(edges.get(succ, ())))))
                    break
                if succ in on_stack:
                    low[node] = min(low[node], index[succ])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return found


def counted(imports: list[Import]) -> list[Import]:
    return [i for i in imports if (i.source, i.target) not in ALLOWED]


def test_every_module_has_a_layer() -> None:
    packages = {package_of(m) for m in MODULES}
    assert sorted(packages - set(LAYER_OF)) == [], "add these to LAYERS (and the README's Layout table)"
    assert sorted(set(LAYER_OF) - packages) == [], "LAYERS names what workbench/ no longer holds"


def test_the_walk_sees_every_kind_of_import() -> None:
    """Known imports of each kind, so a walk that silently stopped finding them fails here."""
    kinds = {(i.source, i.target): i.kind for i in IMPORTS}
    assert kinds[("workbench.kernel.async_kernel", "workbench.sandbox")] == "top"
    assert kinds[("workbench.cli", "workbench.cli.agent")] == "dynamic"
    assert "lazy" in {i.kind for i in IMPORTS if i.source == "workbench.resolve"}
    assert "typing" in {i.kind for i in IMPORTS}


def test_no_import_points_up_the_layers() -> None:
    upward = [
        f"{i}: {package_of(i.source)} (layer {LAYER_OF[package_of(i.source)]}) imports {package_of(i.target)} "
        f"(layer {LAYER_OF[package_of(i.target)]})"
        for i in counted(IMPORTS)
        if LAYER_OF[package_of(i.target)] > LAYER_OF[package_of(i.source)]
    ]
    assert upward == [], "move the glue up (into cli/ or the importer's caller) or invert it through a Protocol"


def test_no_cycle_between_packages() -> None:
    edges: dict[str, set[str]] = defaultdict(set)
    for i in counted(IMPORTS):
        if package_of(i.source) != package_of(i.target):
            edges[package_of(i.source)].add(package_of(i.target))
    assert cycles(edges) == []


def test_no_cycle_between_modules() -> None:
    """Typing imports count: a type named both ways is a cycle of ideas even when it never runs (list the pair
    in ALLOWED with its reason where the two modules are one idea)."""
    edges: dict[str, set[str]] = defaultdict(set)
    for i in counted(IMPORTS):
        edges[i.source].add(i.target)
    found = cycles(edges)
    witnesses = [[str(i) for i in counted(IMPORTS) if i.source in c and i.target in c] for c in found]
    assert witnesses == [], "invert the back-edge through a Protocol in the lower module, or list the pair in ALLOWED"


def test_a_typing_import_closes_a_cycle() -> None:
    """The cycle rule sees typing imports: two modules naming each other's types, one of them only for typing."""
    edges = {"a": {"b"}, "b": {"a"}}  # b -> a as `if TYPE_CHECKING:` writes it
    assert cycles(edges) == [["a", "b"]]
    kinds = {i.kind for i in IMPORTS if (i.source, i.target) in ALLOWED}
    assert kinds == {"typing"}, "ALLOWED lists typing back-edges only; a runtime cycle is to be broken"


def test_the_allow_list_is_still_needed() -> None:
    present = {(i.source, i.target) for i in IMPORTS}
    assert sorted(set(ALLOWED) - present) == [], "these imports are gone: drop them from ALLOWED"


def _readme_layout_rows() -> list[tuple[str, ...]]:
    text = (REPO / "docs" / "concepts" / "architecture.md").read_text()  # the Layout table moved there from the README
    section = text.split("\n## Layout\n", 1)[1].split("\n## ", 1)[0]
    rows = []
    for line in section.splitlines():
        if line.startswith("| `"):
            first_cell = line.split("|")[1]
            names = tuple(re.findall(r"`workbench/([\w./]+)`", first_cell))
            if names:
                rows.append(names)
    return rows


def test_readme_layout_is_the_layer_table() -> None:
    assert _readme_layout_rows() == [names for names, _ in LAYERS], "README.md's Layout table and LAYERS differ"

"""The documentation site is tested like code: it builds strict, its generated pages are current, every
`workbench ...` command line in it parses, every public name is documented and in the API reference, every file,
code name and test the fidelity pages name exists, every `WORKBENCH_*` variable is on its page, and the README stays a
front page. (`tests/test_docs_blocks.py` runs the code blocks.)
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import importlib.util
import io
import os
import re
import shlex
import subprocess
import sys
import zlib
from collections.abc import Iterator
from pathlib import Path

import griffe
import pytest
from test_docs_blocks import doc_blocks, nav_pages

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
README_MAX_LINES = 150


def _load_script(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# -- the strict build --------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def built_site(tmp_path_factory) -> Path:
    """`mkdocs build --strict` into a temp dir: a broken link or anchor, a page outside the nav, an unknown
    mkdocstrings identifier or a griffe warning fails it."""
    site = tmp_path_factory.mktemp("site")
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=ROOT,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, f"mkdocs build --strict failed:\n{done.stdout[-4000:]}\n{done.stderr[-6000:]}"
    return site


def _inventory(site: Path) -> set[str]:
    """The names in the site's objects.inv (Sphinx's inventory format: four header lines, then zlib)."""
    raw = (site / "objects.inv").read_bytes()
    body = zlib.decompress(raw.split(b"\n", 4)[4]).decode()
    return {line.split(" ", 1)[0] for line in body.splitlines() if line.strip()}


@pytest.mark.slow
def test_the_site_builds_strict_and_every_page_is_in_it(built_site):
    for page in nav_pages():
        rel = Path(page).relative_to("docs")
        html = built_site / ("index.html" if rel.name == "index.md" and rel.parent == Path() else "")
        if rel.name != "index.md" or rel.parent != Path():
            html = built_site / (rel.parent if rel.name == "index.md" else rel.with_suffix("")) / "index.html"
        assert html.exists(), f"{page} was not built"


# -- public names ------------------------------------------------------------------------------------
def _packages() -> Iterator[griffe.Module]:
    root = griffe.load("workbench", search_paths=[str(ROOT)], resolve_aliases=True, resolve_external=False)

    def walk(module: griffe.Module) -> Iterator[griffe.Module]:
        yield module
        for sub in module.modules.values():
            if sub.filepath.name == "__init__.py":
                yield from walk(sub)

    yield from walk(root)


def _export(package: griffe.Module, name: str) -> griffe.Object | griffe.Alias:
    obj = package[name]
    if obj.is_module and name in obj.members:  # `launch` the function, imported over the submodule `launch`
        return obj[name]
    return obj


def public_names() -> list[tuple[str, griffe.Object | griffe.Alias]]:
    """(dotted public name, its object) for every name in `workbench`'s and each package's `__all__`."""
    return [(f"{module.path}.{name}", _export(module, name)) for module in _packages() for name in module.exports or []]


def test_every_public_name_has_a_docstring():
    missing = []
    for dotted, obj in public_names():
        try:
            target = obj.final_target if obj.is_alias else obj
        except griffe.AliasResolutionError:
            missing.append(f"{dotted}: its import does not resolve")
            continue
        if not (target.docstring and target.docstring.value.strip()):
            missing.append(f"{dotted} ({target.path}, {target.kind.value})")
    assert missing == [], "give these a docstring (a constant: a string literal on the line after it):\n" + "\n".join(
        missing
    )


@pytest.mark.slow
def test_every_public_name_is_in_the_api_reference(built_site):
    inventory = _inventory(built_site)
    absent = [dotted for dotted, obj in public_names() if dotted not in inventory and obj.path not in inventory]
    assert absent == [], "not in the built API reference (run `python scripts/render_reference.py`):\n" + "\n".join(
        absent
    )


@pytest.mark.slow
def test_every_error_class_is_on_the_errors_page(built_site):
    errors = griffe.load("workbench.errors", search_paths=[str(ROOT)])
    classes = [c.path for c in errors.classes.values()]
    assert "workbench.errors.ConfigError" in classes
    inventory = _inventory(built_site)
    assert [c for c in classes if c not in inventory] == [], "docs/reference/errors.md lost these"


# -- generated pages ---------------------------------------------------------------------------------
def test_the_cli_and_api_pages_are_what_the_code_generates():
    render = _load_script("render_reference")
    pages = render.rendered()
    stale = [str(p.relative_to(ROOT)) for p, text in pages.items() if not p.exists() or p.read_text() != text]
    extra = sorted(str(p.relative_to(ROOT)) for p in (DOCS / "reference" / "api").glob("*.md") if p not in pages)
    assert stale == [] and extra == [], f"stale {stale}, extra {extra}: run `python scripts/render_reference.py`"


def test_every_config_field_has_help_and_every_config_is_on_its_page():
    render = _load_script("render_reference")
    classes = render.config_classes()
    assert {"AgentConfig", "TrainConfig", "DrZeroConfig", "SandboxProfile", "DemoConfig"} <= {
        c.__name__ for c in classes
    }
    bare = [f"{c.__name__}.{name}" for c in classes for name, text in c.fields_help().items() if not text.strip()]
    assert bare == [], "give these fields a help text (config_field(default, help))"


def test_every_command_is_on_the_cli_page():
    from workbench.cli import build_parser

    page = (DOCS / "reference" / "cli.md").read_text()

    def names(parser: argparse.ArgumentParser, path: str) -> Iterator[str]:
        yield path
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    yield from names(sub, f"{path} {name}")

    assert [n for n in names(build_parser(), "workbench") if f"## `{n}`" not in page] == []


# -- command lines -----------------------------------------------------------------------------------
_PLACEHOLDERS = ("…", "...")


def command_lines() -> list[tuple[str, str]]:
    """(where, command line) for each `workbench ...` line in a code block of the README or a page (run or
    shown), and each inline `workbench COMMAND ARG...` span of three words or more; lines with a placeholder
    (`…`) are left out."""
    found = []
    for block in doc_blocks():
        if block.page == "docs/reference/cli.md":  # the parsers' own help
            continue
        for line in re.sub(r"\\\n\s*", " ", block.text).splitlines():
            line = line.split(" #", 1)[0].strip()
            m = re.search(r"(?:^|-m )(workbench\s.*)$", line) if not line.startswith("#") else None
            if m and not any(p in m.group(1) for p in _PLACEHOLDERS):
                found.append((block.id, m.group(1)))
    pages = [ROOT / "README.md", *(ROOT / p for p in nav_pages() if not p.endswith("reference/cli.md"))]
    for page in pages:
        for span in re.findall(r"`(workbench [^`]+)`", page.read_text()):
            if len(span.split()) >= 3 and not any(p in span for p in _PLACEHOLDERS):
                found.append((str(page.relative_to(ROOT)), span))
    return found


def test_every_workbench_command_line_in_the_docs_parses():
    from workbench.cli import build_parser

    lines = command_lines()
    assert len(lines) > 20
    bad = []
    for where, line in lines:
        err = io.StringIO()
        try:
            with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
                build_parser().parse_args(shlex.split(line)[1:])
        except SystemExit as exc:
            if exc.code:
                bad.append(f"{where}: {line}\n    {err.getvalue().strip().splitlines()[-1]}")
    assert bad == [], "these command lines do not parse:\n" + "\n".join(bad)


# -- fidelity ----------------------------------------------------------------------------------------
FIDELITY = DOCS / "research" / "fidelity"
_REF_ROOTS = ("workbench/", "tests/", "bench/", "scripts/")


def fidelity_pages() -> list[Path]:
    """docs/research/fidelity/*.md: the index and one page per seed paper."""
    return sorted(FIDELITY.glob("*.md"))


def fidelity_references(page: Path) -> list[str]:
    """Every `path`, `path:name` (code) and `path::test` span of one fidelity page, paths from the repository root."""
    spans = re.findall(r"`([^`\s]+)`", page.read_text())
    return [s for s in spans if s.startswith(_REF_ROOTS)]


def _defined(path: Path, *, functions_only: bool = False) -> set[str]:
    """Every function (and, unless `functions_only`, class and assigned name) a Python file defines, at any depth."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            names.add(node.name)
        elif functions_only:
            continue
        elif isinstance(node, ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {t.id for t in targets if isinstance(t, ast.Name)}
    return names


def missing_reference(ref: str) -> str | None:
    """Why `ref` names nothing real, or None: the file exists, a `::test` is a function in it, and every part
    of a `:name` (`:Class.method`, `:function.inner`) is defined in it."""
    path, test, name = ref.partition("::")
    if not test:
        path, _, name = ref.partition(":")
    files = sorted(ROOT.glob(path)) if "*" in path else [ROOT / path]
    if not files or not all(f.exists() for f in files):
        return f"{ref}: no such file"
    if name:
        if len(files) != 1 or files[0].suffix != ".py":
            return f"{ref}: a name needs one Python file"
        defined = _defined(files[0], functions_only=bool(test))
        undefined = [part for part in name.split("[")[0].split(".") if part not in defined]
        if undefined:
            return f"{ref}: {path} defines no {'.'.join(undefined)}"
    return None


def test_missing_reference_catches_a_wrong_file_test_or_name():
    assert (
        missing_reference("tests/test_docs_site.py::test_missing_reference_catches_a_wrong_file_test_or_name") is None
    )
    assert missing_reference("workbench/rewards/drzero.py:drzero_format") is None
    assert missing_reference("tests/test_docs_site.py::test_no_such_test") is not None
    assert missing_reference("tests/test_docs_site.py::FIDELITY") is not None  # a test is a function
    assert missing_reference("workbench/rewards/drzero.py:no_such_function") is not None
    assert missing_reference("workbench/rewards/no_such_file.py") is not None
    assert missing_reference("workbench/evolve/modes.py:drzero_mode.select") is None
    assert missing_reference("workbench/evolve/modes.py:drzero_mode.no_such_step") is not None


def test_the_fidelity_pages_are_the_index_and_one_per_seed_paper_all_in_the_nav():
    names = {p.name for p in fidelity_pages()}
    assert names == {"index.md", "drzero.md", "zerosearch.md", "agent0.md", "asearcher.md", "l0.md"}
    nav = set(nav_pages())
    assert {f"docs/research/fidelity/{n}" for n in names} <= nav


@pytest.mark.parametrize("page", [p.name for p in fidelity_pages()])
def test_every_file_code_and_test_a_fidelity_page_names_exists(page):
    refs = fidelity_references(FIDELITY / page)
    if page != "index.md":
        assert len(refs) > 10, f"{page} names each mechanism's code and test"
        assert any("::test_" in r for r in refs)
    missing = [why for ref in refs if (why := missing_reference(ref))]
    assert missing == [], f"docs/research/fidelity/{page} names these, which do not exist:\n" + "\n".join(missing)


# -- environment variables ---------------------------------------------------------------------------
def test_every_workbench_environment_variable_is_documented():
    page = (DOCS / "reference" / "environment-variables.md").read_text()
    sources = [*(ROOT / "workbench").rglob("*.py"), *(ROOT / "tests").rglob("*.py"), ROOT / "scripts" / "setup.sh"]
    texts = [f.read_text() for f in sources]
    constants = {m for t in texts for m in re.findall(r"^(WORKBENCH_[A-Z_]+)\s*[:=]", t, re.M)}  # Python names
    names = {m for t in texts for m in re.findall(r"""["'$](WORKBENCH_[A-Z][A-Z_]*)""", t)} - constants
    assert {"WORKBENCH_MODELS_DIR", "WORKBENCH_GATEWAY"} <= names
    assert sorted(n for n in names if f"`{n}`" not in page) == [], "add these to the environment variables page"


# -- the README --------------------------------------------------------------------------------------
def test_the_readme_is_a_front_page_whose_links_resolve():
    text = (ROOT / "README.md").read_text()
    assert len(text.splitlines()) <= README_MAX_LINES, "the README is a front page: move detail into docs/"
    links = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text)
    local = [link for link in links if "://" not in link]
    assert len(local) > 20
    assert [link for link in local if not (ROOT / link).exists()] == []


@pytest.mark.slow
def test_each_tutorial_is_a_page_under_its_banner(built_site):
    """Every notebook of notebooks/ is a Tutorials page: rendered from the test suite's executed copy (under
    "Smoke size, <commit>") where one exists, else from its source under a banner that says so."""
    tutorials = sorted(p.stem for p in (ROOT / "notebooks").glob("*.ipynb") if not p.name.startswith("_"))
    config = (ROOT / "mkdocs.yml").read_text()
    listed = [line.strip().removeprefix("- ") for line in config.splitlines() if line.strip().endswith(".ipynb")]
    assert listed == [f"tutorials/{name}.ipynb" for name in tutorials], "mkdocs.yml's Tutorials list every notebook"
    for name in tutorials:
        html = (built_site / "tutorials" / name / "index.html").read_text(encoding="utf-8")
        executed = (ROOT / "docs" / "tutorials" / "executed" / f"{name}.ipynb").is_file()
        assert ("Smoke size, " in html) if executed else ("Not executed in this build" in html), name

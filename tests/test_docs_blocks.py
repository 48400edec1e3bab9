"""Every ```bash and ```python block of README.md and of the docs/ pages runs here, so the docs cannot drift from
the code.

The blocks run in order (the README's first, then each page in the order of mkdocs.yml's nav) inside one working
directory that holds what `make demo` leaves behind: `runs/demo/` built by the real demo pipeline at smoke sizes
(its world, stores, final model) and `examples/` (the shipped configs). A page may use what an earlier one made
(`runs/first`, `runs/tiny`). Shell lines run one by one through bash with the venv's `workbench` on PATH; a
`workbench serve-*` line is started, checked to answer on its port, then stopped. Python blocks run in a fresh
interpreter each, with top-level `await` allowed (as in Jupyter). ```console and ```text blocks are shown, not
run. What the test changes is listed below, each with its reason:

- SKIP: blocks that cannot run inside the test suite;
- SUBSTITUTIONS: text replaced in a block before it runs;
- PRELUDES: Python run before a block, defining names the page leaves to the reader.

A key is text found in a block, or `PAGE::text` for text in one page's blocks only. A block added to a page runs
too; if it cannot run here, add it to SKIP with a reason. `test_tables_match_the_docs` fails when an entry no
longer matches any block, and when a page with code blocks is missing from the nav.
"""

from __future__ import annotations

import ast
import os
import re
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = ROOT / "docs"

SKIP = {
    "make demo    # set-up": "builds the venv and runs the full demo / the whole test suite (this test is part of it)",
    "docs/guides/training.md::handle = launch(": "the README's quick start runs the same launch",
    'connect("auto")': "joins a running Ray cluster; tests/cluster/ runs the same calls on the session's cluster",
    "docs/getting-started/demo.md::python -m workbench.demo --mode agent0": (
        "three demo runs, the first at make demo's full size (tens of minutes); tests/demo/test_agent0_mode.py "
        "runs --mode agent0 at smoke size, scripted and learned"
    ),
}
"""A block containing the key is not run; the value says why."""

SUBSTITUTIONS = {
    "runs/first 3fa9": ("runs/first {first_id}", "the id prefix is an example; use a real one"),
    "--limit 20": ("--limit 3", "the smoke-sized model needs only a few questions to show the command works"),
    "--port 8000": ("--port {free_port}", "port 8000 may be taken on a shared machine"),
    "Qwen/Qwen2.5-0.5B-Instruct": ("my-org/tiny", "tests never download: the prelude's hub cache holds runs/tiny"),
    "train examples/train.toml --set max_steps=1": (
        "train examples/train.toml --set max_steps=1 --set max_turns=2 --set max_turn_tokens=48",
        "short episodes show the command works; tests/train/test_processes.py checks what two ranks do",
    ),
}
"""old text → (new text, reason); {first_id} and {free_port} are filled in when the line runs."""

PRELUDES = {
    "store.children(proposer_id)": (
        "from workbench.store import Store as _S\n"
        "proposer_id = _S.open_readonly('runs/demo/evolve').query(role='proposer').id.iloc[0]\n",
        "the page leaves proposer_id to the reader: take one from the demo's evolve run",
    ),
    "transformers:Qwen/Qwen2.5-0.5B-Instruct@main": (
        "import os, shutil\n"
        "os.environ['HF_HOME'] = os.path.abspath('hf-home')\n"
        "_repo = 'hf-home/hub/models--my-org--tiny'\n"
        "shutil.copytree('runs/tiny', _repo + '/snapshots/' + '0' * 40, dirs_exist_ok=True)\n"
        "os.makedirs(_repo + '/refs', exist_ok=True)\n"
        "open(_repo + '/refs/main', 'w').write('0' * 40)\n",
        "the hub id is the reader's: lay out a hub cache (HF_HOME, offline) holding runs/tiny as my-org/tiny",
    ),
    'Corpus.from_jsonl("corpus.jsonl")': (
        "import shutil\nshutil.copy('runs/demo/world/corpus.jsonl', 'corpus.jsonl')\n",
        "the block reads a corpus.jsonl of the reader's own: use the demo world's",
    ),
}
"""text in a block → (Python run first, reason)."""

PY_RUNNER = """
import ast, asyncio, sys
src = open(sys.argv[1]).read()
code = compile(src, sys.argv[1], "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
result = eval(code, {"__name__": "__main__"})
if asyncio.iscoroutine(result):
    asyncio.run(result)
"""


RUN = {"bash": "bash", "sh": "bash", "shell": "bash", "python": "python", "console": "", "text": ""}
"""Fence language -> how its block runs ("": shown, not run). A fence with another language is not a block here."""


@dataclass
class Block:
    page: str  # "README.md" or a path under docs/
    lang: str  # "bash", "python", or "" (shown, not run)
    line: int  # 1-based line of the opening fence
    text: str

    @property
    def id(self) -> str:
        return f"{self.page}:L{self.line}-{self.lang or 'shown'}"


def page_blocks(page: str, text: str | None = None) -> list[Block]:
    """The fenced blocks of one page, in order."""
    text = (ROOT / page).read_text() if text is None else text
    blocks, lines, i = [], text.splitlines(), 0
    while i < len(lines):
        fence = re.match(r"^```(\w+)\s*$", lines[i])
        if fence:
            j = i + 1
            while j < len(lines) and not lines[j].startswith("```"):
                j += 1
            if fence.group(1) in RUN:
                blocks.append(Block(page, RUN[fence.group(1)], i + 1, "\n".join(lines[i + 1 : j]) + "\n"))
            i = j
        i += 1
    return blocks


def nav_pages() -> list[str]:
    """The pages of mkdocs.yml's nav, in its order, as paths from the repository root."""

    def walk(node: object) -> list[str]:
        if isinstance(node, str):
            return [f"docs/{node}"] if node.endswith(".md") else []
        if isinstance(node, list):
            return [p for item in node for p in walk(item)]
        if isinstance(node, dict):
            return [p for value in node.values() for p in walk(value)]
        return []

    return walk(yaml.safe_load((ROOT / "mkdocs.yml").read_text())["nav"])


def doc_blocks() -> list[Block]:
    """Every block of the README, then of each page in the nav's order."""
    return [b for page in ["README.md", *nav_pages()] for b in page_blocks(page)]


def _matches(key: str, block: Block) -> bool:
    page, sep, text = key.rpartition("::")
    return text in block.text and (not sep or block.page == page)


def _skip_reason(block: Block) -> str | None:
    return next((why for key, why in SKIP.items() if _matches(key, block)), None)


def test_tables_match_the_docs():
    blocks = doc_blocks()
    assert any(b.lang == "bash" for b in blocks) and any(b.lang == "python" for b in blocks)
    for table in (SKIP, SUBSTITUTIONS, PRELUDES):
        for key in table:
            assert any(_matches(key, b) for b in blocks), f"{key!r} matches no block: update the table"
    for block in blocks:  # python blocks must at least parse (top-level await allowed)
        if block.lang == "python":
            compile(block.text, block.id, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    in_nav = set(nav_pages())
    unrun = [
        str(p.relative_to(ROOT))
        for p in sorted(DOCS.rglob("*.md"))
        if str(p.relative_to(ROOT)) not in in_nav and any(b.lang for b in page_blocks(str(p.relative_to(ROOT))))
    ]
    assert unrun == [], "these pages have code blocks but are not in mkdocs.yml's nav, so nothing runs them"


def test_block_extraction():
    text = "intro\n```bash\necho hi\n```\n\n```python\nx = 1\n```\n```text\nshown\n```\n```toml\na = 1\n```\n"
    blocks = page_blocks("docs/x.md", text)
    assert [(b.lang, b.line, b.text) for b in blocks] == [
        ("bash", 2, "echo hi\n"),
        ("python", 6, "x = 1\n"),
        ("", 9, "shown\n"),
    ]
    assert blocks[0].id == "docs/x.md:L2-bash"
    assert _matches("docs/x.md::echo", blocks[0]) and not _matches("README.md::echo", blocks[0])


# -- running the blocks ---------------------------------------------------------------------------
@pytest.fixture(scope="session")
def docs_dir(fast_demo, smollm2_models):
    """A working directory as after `make demo` (smoke sizes, the session's `fast_demo`) with the
    example configs, and the run's converted SmolLM2 as its models directory (`workbench models add
    smollm2` finds it there; tests/models checks the conversion itself)."""
    work = fast_demo.run_dir.parent.parent
    (work / "examples").symlink_to(ROOT / "examples")
    (work / "models").symlink_to(smollm2_models)
    return work


def _env(work: Path) -> dict[str, str]:
    bin_dir = str(Path(sys.executable).parent)
    return {
        **os.environ,
        "PATH": bin_dir + os.pathsep + os.environ.get("PATH", ""),
        "HF_HUB_OFFLINE": "1",
        "PYTHONPATH": str(ROOT),
        "WORKBENCH_MODELS_DIR": str(work / "models"),  # `workbench models add` writes there, not in ~/.cache
    }


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _first_id(work: Path) -> str:
    from workbench.store import Store

    with Store.open_readonly(work / "runs" / "first") as store:
        return next(iter(store.iter_trajectories())).id[:6]


def _substitute(text: str, work: Path) -> str:
    for old, (new, _why) in SUBSTITUTIONS.items():
        if old in text:
            fill = {
                "first_id": _first_id(work) if "{first_id}" in new else "",
                "free_port": _free_port() if "{free_port}" in new else "",
            }
            text = text.replace(old, new.format(**fill))
    return text


def _bash_lines(text: str) -> list[str]:
    joined = re.sub(r"\\\n", " ", text)
    return [line for line in joined.splitlines() if line.strip() and not line.lstrip().startswith("#")]


def _serve(line: str, work: Path) -> None:
    port = int(re.search(r"--port (\d+)", line).group(1))
    proc = subprocess.Popen(
        ["bash", "-c", f"exec {line}"],
        cwd=work,
        env=_env(work),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            assert proc.poll() is None, f"{line!r} exited early:\n{proc.stdout.read()[-3000:]}"
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                return
            except OSError:
                time.sleep(0.5)
        pytest.fail(f"{line!r} did not listen on port {port} within 300 s")
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        proc.stdout.close()


def _run_bash(block: Block, work: Path) -> None:
    for line in _bash_lines(block.text):
        line = _substitute(line, work)
        if re.match(r"\s*workbench serve-", line):
            _serve(line, work)
            continue
        done = subprocess.run(
            ["bash", "-c", line], cwd=work, env=_env(work), capture_output=True, text=True, timeout=900
        )
        assert done.returncode == 0, f"{block.id}: {line!r} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"


def _run_python(block: Block, work: Path) -> None:
    prelude = "".join(code for key, (code, _why) in PRELUDES.items() if key in block.text)
    path = work / ("block_" + re.sub(r"\W", "_", block.id) + ".py")
    path.write_text(prelude + _substitute(block.text, work))
    done = subprocess.run(
        [sys.executable, "-c", PY_RUNNER, str(path)],
        cwd=work,
        env=_env(work),
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, f"{block.id} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"


@pytest.mark.slow
@pytest.mark.timeout(1800)
@pytest.mark.xdist_group("readme")  # one worker runs the smoke demo once (`fast_demo`) and every block
@pytest.mark.parametrize("block", [b for b in doc_blocks() if b.lang], ids=lambda b: b.id)
def test_doc_block_runs(block, docs_dir):
    reason = _skip_reason(block)
    if reason:
        pytest.skip(f"allow-listed: {reason}")
    (_run_bash if block.lang == "bash" else _run_python)(block, docs_dir)

"""Every ```bash and ```python block of README.md runs here, so the README cannot drift from the code.

The blocks run in order inside one working directory that holds what `make demo` leaves behind:
`runs/demo/` built by the real demo pipeline at smoke sizes (its world, stores, final model) and
`examples/` (the shipped configs). Shell lines run one by one through bash with the venv's
`workbench` on PATH; a `workbench serve-*` line is started, checked to answer on its port, then
stopped. Python blocks run in a fresh interpreter each, with top-level `await` allowed (as in
Jupyter). What the test changes is listed below, each with its reason:

- SKIP: blocks that cannot run inside the test suite;
- SUBSTITUTIONS: text replaced in a block before it runs;
- PRELUDES: Python run before a block, defining names the README leaves to the reader.

A block added to the README runs too; if it cannot run here, add it to SKIP with a reason.
`test_tables_match_the_readme` fails when an entry no longer matches any block.
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

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"

SKIP = {
    "make demo    # set-up": "builds the venv and runs the full demo / the whole test suite (this test is part of it)",
    'connect("auto")': "joins a running Ray cluster; tests/cluster/ runs the same calls on the session's cluster",
}
"""A block containing the key is not run; the value says why."""

SUBSTITUTIONS = {
    "runs/first 3fa9": ("runs/first {first_id}", "the README's id prefix is an example; use a real one"),
    "--limit 20": ("--limit 3", "the smoke-sized model needs only a few questions to show the command works"),
    "--port 8000": ("--port {free_port}", "port 8000 may be taken on a shared machine"),
    "Qwen/Qwen2.5-0.5B-Instruct": ("my-org/tiny", "tests never download: the prelude's hub cache holds runs/tiny"),
    "train examples/train.toml --set max_steps=1": (
        "train examples/train.toml --set max_steps=1 --set max_turns=2 --set max_turn_tokens=48",
        "two ranks of short episodes show the command works; tests/train/test_processes.py checks what it does",
    ),
}
"""old text → (new text, reason); {first_id} and {free_port} are filled in when the line runs."""

PRELUDES = {
    "store.children(proposer_id)": (
        "from workbench.store import Store as _S\n"
        "proposer_id = _S.open_readonly('runs/demo/evolve').query(role='proposer').id.iloc[0]\n",
        "the README leaves proposer_id to the reader: take one from the demo's evolve run",
    ),
    "transformers:Qwen/Qwen2.5-0.5B-Instruct@main": (
        "import os, shutil\n"
        "os.environ['HF_HOME'] = os.path.abspath('hf-home')\n"
        "_repo = 'hf-home/hub/models--my-org--tiny'\n"
        "shutil.copytree('runs/tiny', _repo + '/snapshots/' + '0' * 40, dirs_exist_ok=True)\n"
        "os.makedirs(_repo + '/refs', exist_ok=True)\n"
        "open(_repo + '/refs/main', 'w').write('0' * 40)\n",
        "the README's hub id is the reader's: lay out a hub cache (HF_HOME, offline) holding runs/tiny as my-org/tiny",
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


@dataclass
class Block:
    lang: str
    line: int  # 1-based line of the opening fence
    text: str

    @property
    def id(self) -> str:
        return f"L{self.line}-{self.lang}"


def readme_blocks(text: str | None = None) -> list[Block]:
    text = README.read_text() if text is None else text
    blocks, lines, i = [], text.splitlines(), 0
    while i < len(lines):
        fence = re.match(r"^```(bash|python|sh|shell)\s*$", lines[i])
        if fence:
            j = i + 1
            while j < len(lines) and not lines[j].startswith("```"):
                j += 1
            lang = "python" if fence.group(1) == "python" else "bash"
            blocks.append(Block(lang, i + 1, "\n".join(lines[i + 1 : j]) + "\n"))
            i = j
        i += 1
    return blocks


def _skip_reason(block: Block) -> str | None:
    return next((why for key, why in SKIP.items() if key in block.text), None)


def test_tables_match_the_readme():
    blocks = readme_blocks()
    assert any(b.lang == "bash" for b in blocks) and any(b.lang == "python" for b in blocks)
    for table in (SKIP, SUBSTITUTIONS, PRELUDES):
        for key in table:
            assert any(key in b.text for b in blocks), f"{key!r} matches no README block: update the table"
    for block in blocks:  # python blocks must at least parse (top-level await allowed)
        if block.lang == "python":
            compile(block.text, block.id, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)


def test_block_extraction():
    text = "intro\n```bash\necho hi\n```\n\n```python\nx = 1\n```\n```text\nnot run\n```\n"
    blocks = readme_blocks(text)
    assert [(b.lang, b.line, b.text) for b in blocks] == [("bash", 2, "echo hi\n"), ("python", 6, "x = 1\n")]


# -- running the blocks ---------------------------------------------------------------------------
@pytest.fixture(scope="session")
def readme_dir(fast_demo, smollm2_models):
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
        assert done.returncode == 0, (
            f"README {block.id}: {line!r} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
        )


def _run_python(block: Block, work: Path) -> None:
    prelude = "".join(code for key, (code, _why) in PRELUDES.items() if key in block.text)
    path = work / f"readme_{block.id}.py"
    path.write_text(prelude + _substitute(block.text, work))
    done = subprocess.run(
        [sys.executable, "-c", PY_RUNNER, str(path)],
        cwd=work,
        env=_env(work),
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, f"README {block.id} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"


@pytest.mark.slow
@pytest.mark.timeout(1800)
@pytest.mark.xdist_group("readme")  # one worker runs the smoke demo once (`fast_demo`) and every block
@pytest.mark.parametrize("block", readme_blocks(), ids=lambda b: b.id)
def test_readme_block_runs(block, readme_dir):
    reason = _skip_reason(block)
    if reason:
        pytest.skip(f"allow-listed: {reason}")
    (_run_bash if block.lang == "bash" else _run_python)(block, readme_dir)

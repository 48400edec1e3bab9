"""The runtime in a real separate process: a plain python subprocess, and a sandboxed ipykernel."""

import asyncio
import json
import os
import subprocess
import sys

import pytest

from workbench.tools import SNAPSHOT_EXPRESSION, ToolGateway, setup_code, snapshot_from_user_expression

KERNEL_CODE = """
import inspect
print(inspect.signature(search))
print(search("capital of France", top_k=1))
notepad.add_todo(["search", "answer"])
notepad.update_todo(1, "done")
try:
    boom("no")
except Exception as exc:
    print(type(exc).__name__, exc)
submit_final_answer("Paris")
"""


def test_subprocess_kernel_uses_the_env_socket(registry, sock_dir):
    async def main():
        async with ToolGateway(registry, sock_dir / "gateway.sock") as gw:
            code = setup_code(registry, token=gw.token) + KERNEL_CODE  # socket from $WORKBENCH_GATEWAY
            proc = await asyncio.create_subprocess_exec(
                sys.executable,
                "-c",
                code,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                env={**os.environ, "WORKBENCH_GATEWAY": str(gw.socket_path)},
            )
            out = (await proc.communicate())[0].decode()
            assert proc.returncode == 0, out
            assert out.splitlines() == [
                "(query: str, top_k: int = 3) -> str",
                "Doc 1 (Title: Paris) Paris is the capital and largest city of France.",
                "ToolCallError boom() failed: RuntimeError: no",
                "Final answer submitted: Paris",
            ]
            assert gw.final_answer == "Paris" and gw.notepad["todos"][0]["status"] == "done"
            assert [c.name for c in gw.take_calls()] == ["search", "boom", "submit_final_answer"]

    asyncio.run(main())


IPYTHON_SCRIPT = """
from IPython.core.interactiveshell import InteractiveShell
shell = InteractiveShell.instance(colors="nocolor")
shell.run_cell(SETUP)
shell.run_cell("for i in range(20): notepad.add_todo(f'step {i}')")
shell.run_cell("notepad.update_todo(99, 'done')")
shell.run_cell("add('x')")
shell.run_cell(SETUP)  # installing twice replaces the hook, not doubles it
shell.run_cell("notepad.add_fact('after reinstall')")
"""


def test_under_ipython_one_push_per_cell_and_short_tracebacks(registry, sock_dir):
    async def main():
        async with ToolGateway(registry, sock_dir / "gw.sock") as gw:
            setup = setup_code(registry, token=gw.token, socket_path=str(gw.socket_path))
            proc = await asyncio.create_subprocess_exec(
                sys.executable,
                "-c",
                f"SETUP = {setup!r}\n" + IPYTHON_SCRIPT,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
            )
            out = (await proc.communicate())[0].decode()
            assert proc.returncode == 0, out
            assert "NotepadError: no todo with id 99; valid todos: 1 ('step 0')" in out
            assert "ToolArgumentError" not in out and "argument 'a' must be int, got str" in out
            assert "notepad.py" not in out and "stubs.py" not in out and "bridge.py" not in out
            assert gw.notepad_pushes == 2  # one cell of 20 edits, one cell after the reinstall
            assert gw.notepad["facts"] == ["after reinstall"]

    asyncio.run(main())


def test_snapshot_from_user_expression():
    text = repr(json.dumps({"todos": [], "facts": ["f"], "draft": ""}))
    assert snapshot_from_user_expression({"status": "ok", "data": {"text/plain": text}})["facts"] == ["f"]
    assert "snapshot_json()" in SNAPSHOT_EXPRESSION


@pytest.mark.slow
def test_sandboxed_kernel_round_trip(registry):
    kernel_mod = pytest.importorskip("workbench.kernel")
    from workbench.errors import SandboxError

    async def main():
        kernel = kernel_mod.AsyncKernel(startup_code="import workbench.runtime")
        try:
            await kernel.start()
        except SandboxError as exc:
            pytest.skip(f"no sandbox here: {exc}")
        try:
            async with ToolGateway(registry, kernel.rollout_dir / "run" / "gateway.sock", rollout_id="it") as gw:
                setup = await kernel.execute(gw.setup_code(), silent=True)
                assert setup.ok, setup.text
                obs = await kernel.execute(KERNEL_CODE)
                assert obs.ok, obs.text
                assert "Doc 1 (Title: Paris)" in obs.text and "Final answer submitted: Paris" in obs.text
                assert "ToolCallError boom() failed: RuntimeError: no" in obs.text
                assert gw.final_answer == "Paris" and gw.notepad["todos"][1]["text"] == "answer"
                failed = await kernel.execute("add('not an int')")
                assert not failed.ok and "argument 'a' must be int, got str" in failed.text
                assert "stubs.py" not in failed.text  # runtime frames are trimmed for the model
                bad = await kernel.execute("notepad.update_todo(7, 'done')")
                assert bad.text.strip().endswith(
                    "NotepadError: no todo with id 7; valid todos: 1 ('search'), 2 ('answer')"
                )
                assert "notepad.py" not in bad.text
                pushes = gw.notepad_pushes
                many = await kernel.execute("for i in range(50): notepad.add_fact(f'fact {i}')")
                assert many.ok and gw.notepad_pushes == pushes + 1  # one push per cell
                assert gw.notepad["facts"][-1] == "fact 49"
                assert [c.name for c in gw.take_calls()] == ["search", "boom", "submit_final_answer", "add"]
        finally:
            await kernel.close()

    asyncio.run(main())

"""Kernel-side stubs talking to a real ToolGateway over a real unix socket.

The "kernel" here is the runtime running in a worker thread of the test process (blocking
sockets, as in a kernel); test_kernel_side.py runs it in separate processes.
"""

import asyncio
import inspect

import pytest

from workbench.runtime import ToolCallError, snapshot_json
from workbench.tools import ToolGateway, setup_code


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 60))


def kernel_namespace(gw: ToolGateway) -> dict:
    """What the setup cell leaves in a fresh kernel namespace."""
    ns: dict = {}
    exec(setup_code(gw.registry, token=gw.token, socket_path=str(gw.socket_path), call_timeout_s=gw.call_timeout_s), ns)
    return ns


async def in_kernel(fn, *args, **kwargs):
    return await asyncio.to_thread(fn, *args, **kwargs)


def test_setup_cell_binds_only_notepad_and_tools(registry, sock_dir):
    async def main():
        async with ToolGateway(registry, sock_dir / "gw.sock", rollout_id="r") as gw:
            ns = kernel_namespace(gw)
            assert sorted(k for k in ns if k != "__builtins__") == sorted(["notepad", *registry.names])
            assert str(inspect.signature(ns["search"])) == "(query: str, top_k: int = 3) -> str"
            assert str(inspect.signature(ns["submit_final_answer"])) == "(answer: str) -> None"
            assert ns["add"].__doc__ == "Add two integers." and ns["add"].__name__ == "add"
            with pytest.raises(TypeError, match=r"add\(\) missing a required argument: 'a'"):
                ns["add"]()
            with pytest.raises(TypeError, match="JSON values"):
                ns["add"]({1, 2})
            assert gw.calls == []  # checked locally, never sent

    run(main())


def test_calls_round_trip_and_are_recorded(registry, sock_dir):
    async def main():
        async with ToolGateway(registry, sock_dir / "gw.sock", rollout_id="r") as gw:
            ns = kernel_namespace(gw)
            assert await in_kernel(ns["search"], "capital of France", top_k=1) == (
                "Doc 1 (Title: Paris) Paris is the capital and largest city of France."
            )
            assert await in_kernel(ns["add"], 2, b=5) == 7
            assert await in_kernel(ns["async_echo"], "hi", times=2) == ["hi", "hi"]
            calls = gw.take_calls()
            assert [c.name for c in calls] == ["search", "add", "async_echo"]
            assert calls[1].arguments == {"a": 2, "b": 5} and calls[1].result == 7
            assert calls[0].arguments == {"query": "capital of France", "top_k": 1}
            assert all(c.error is None and c.duration_s > 0 and c.started_at > 0 for c in calls)
            assert gw.take_calls() == [] and gw.calls_used == 3

    run(main())


def test_host_errors_arrive_as_exceptions(registry, sock_dir):
    async def main():
        async with ToolGateway(registry, sock_dir / "gw.sock", rollout_id="r") as gw:
            ns = kernel_namespace(gw)
            with pytest.raises(ToolCallError, match="boom\\(\\) failed: RuntimeError: kaput") as err:
                await in_kernel(ns["boom"], "kaput")
            assert err.value.tool == "boom"
            with pytest.raises(ToolCallError, match="not JSON-able"):
                await in_kernel(ns["not_json"])
            with pytest.raises(ToolCallError, match="top_k must be between 1 and 10"):
                await in_kernel(ns["search"], "x", top_k=99)
            with pytest.raises(ToolCallError, match="argument 'a' must be int, got str"):
                await in_kernel(ns["add"], "2")
            assert [c.error is not None for c in gw.take_calls()] == [True] * 4

    run(main())


def test_long_results_are_truncated(registry, sock_dir):
    async def main():
        async with ToolGateway(registry, sock_dir / "gw.sock", max_result_chars=100) as gw:
            out = await in_kernel(kernel_namespace(gw)["huge"], 1000)
            assert out.startswith("x" * 100) and out.endswith("[truncated 900 chars]")

    run(main())


def test_budget_then_final_answer(registry, sock_dir, capsys):
    async def main():
        async with ToolGateway(registry, sock_dir / "gw.sock", call_budget=2) as gw:
            ns = kernel_namespace(gw)
            await in_kernel(ns["add"], 1)
            await in_kernel(ns["add"], 2)
            with pytest.raises(ToolCallError, match=r"budget \(2 calls\) is used up; finish with"):
                await in_kernel(ns["add"], 3)
            assert await in_kernel(ns["submit_final_answer"], 42) is None  # exempt from the budget
            assert gw.final_answer == "42" and gw.calls_left == 0
            assert gw.calls[-1].name == "submit_final_answer" and gw.calls[-1].arguments == {"answer": "42"}

    run(main())
    assert "Final answer submitted: 42" in capsys.readouterr().out


def test_timeout_replies_and_gateway_keeps_serving(registry, sock_dir):
    async def main():
        async with ToolGateway(registry, sock_dir / "gw.sock", call_timeout_s=0.3) as gw:
            ns = kernel_namespace(gw)
            with pytest.raises(ToolCallError, match=r"nap\(\) timed out after 0.3 s"):
                await in_kernel(ns["nap"], 3)
            assert await in_kernel(ns["add"], 1) == 2
            assert gw.calls[0].error.startswith("nap() timed out") and gw.calls[0].duration_s < 2

    run(main())


def test_notepad_edits_reach_the_host(registry, sock_dir):
    async def main():
        async with ToolGateway(registry, sock_dir / "gw.sock") as gw:
            pad = kernel_namespace(gw)["notepad"]
            assert gw.notepad is None
            await in_kernel(pad.add_todo, ["find X", "find Y"])
            await in_kernel(pad.update_todo, 1, "done")
            await in_kernel(pad.add_fact, "X is 3")
            assert gw.notepad == pad.snapshot()
            assert gw.notepad["todos"][0]["status"] == "done" and gw.notepad["facts"] == ["X is 3"]
            assert gw.calls == [] and gw.calls_used == 0  # pushes are not tool calls
            import json

            assert json.loads(snapshot_json()) == gw.notepad

    run(main())


def test_no_gateway_is_a_clear_error(registry, sock_dir):
    ns: dict = {}
    exec(setup_code(registry, token="t", socket_path=str(sock_dir / "absent.sock")), ns)
    with pytest.raises(ToolCallError, match=r"cannot reach the tool gateway .* WORKBENCH_GATEWAY"):
        ns["add"](1)
    ns["notepad"].add_todo("still works without a gateway")
    assert ns["notepad"].todos[0].id == 1


def test_socket_is_world_connectable_and_removed_on_close(registry, sock_dir):
    async def main():
        path = sock_dir / "run" / "gateway.sock"
        path.parent.mkdir()
        path.write_bytes(b"")  # a stale non-socket is refused with a clear message
        from workbench.errors import ConfigError

        with pytest.raises(ConfigError, match="not a socket"):
            await ToolGateway(registry, path).start()
        path.unlink()
        async with ToolGateway(registry, path):
            assert path.is_socket() and (path.stat().st_mode & 0o777) == 0o666
        assert not path.exists()
        with pytest.raises(ConfigError, match="unix limit"):
            ToolGateway(registry, "/tmp/" + "x" * 120)

    run(main())

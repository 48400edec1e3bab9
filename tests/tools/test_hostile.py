"""Hostile kernels: garbage, oversize lines, floods, bad tokens. The gateway answers or hangs up,
records what happened, and keeps serving a well-behaved client (and other rollouts) meanwhile."""

import asyncio
import json

import pytest

from workbench.runtime import GatewayClient
from workbench.tools import ToolGateway


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 60))


async def raw(path, payload: bytes) -> bytes:
    """Send bytes and return the first line the gateway sends back (b"" if it just hangs up)."""
    reader, writer = await asyncio.open_unix_connection(str(path))
    try:
        writer.write(payload)
        await writer.drain()
        return await reader.readline()
    except OSError:  # the gateway hung up (after replying) while we were still sending
        return b""
    finally:
        writer.close()


def good_client(gw, n=20):
    """A well-behaved kernel (blocking, in a thread): n calls to add()."""
    client = GatewayClient(str(gw.socket_path), gw.token, timeout_s=10)
    return [client.request({"op": "call", "tool": "add", "args": [i], "kwargs": {}}) for i in range(n)]


def request(gw, **fields) -> bytes:
    return (json.dumps({"id": 1, "op": "call", "token": gw.token, "args": [], "kwargs": {}, **fields}) + "\n").encode()


def test_garbage_gets_an_error_then_hangup(registry, sock_dir):
    async def main():
        async with ToolGateway(registry, sock_dir / "gw.sock") as gw:
            reply = await raw(gw.socket_path, b"\xff\xfe\x00garbage\nmore after it\n")
            assert json.loads(reply) == {"id": None, "ok": False, "error": "requests are JSON objects, one per line"}
            assert b'"ok":false' in await raw(gw.socket_path, b"[1, 2, 3]\n")
            assert len(gw.rejected) >= 2 and gw.calls == []
            assert (await asyncio.to_thread(good_client, gw, 3))[-1]["result"] == 3

    run(main())


def test_oversize_request_is_refused(registry, sock_dir):
    async def main():
        async with ToolGateway(registry, sock_dir / "gw.sock", max_request_bytes=10_000) as gw:
            reply = await raw(gw.socket_path, b"x" * 50_000)
            assert json.loads(reply.splitlines()[0])["error"] == "request over 10000 bytes"
            big = request(gw, tool="search", args=["q" * 20_000])
            assert b"request over 10000 bytes" in await raw(gw.socket_path, big)
            assert gw.calls == [] and "request over 10000 bytes" in gw.rejected

    run(main())


def test_unknown_tool_wrong_args_bad_token_are_replied_and_recorded(registry, sock_dir):
    async def main():
        async with ToolGateway(registry, sock_dir / "gw.sock") as gw:
            r = json.loads(await raw(gw.socket_path, request(gw, tool="rm_rf")))
            assert r["ok"] is False and r["error"].startswith("unknown tool 'rm_rf'; available tools: search")
            r = json.loads(await raw(gw.socket_path, request(gw, tool="add", args=[1], kwargs={"zz": 1})))
            assert "unexpected keyword argument 'zz'" in r["error"]
            r = json.loads(await raw(gw.socket_path, request(gw, tool="add", args="notalist")))
            assert "args: list" in r["error"]
            r = json.loads(await raw(gw.socket_path, request(gw, tool="add", args=[1], token="nope")))
            assert r["error"].startswith("bad gateway token")
            r = json.loads(await raw(gw.socket_path, request(gw, op="shell")))
            assert "unknown op" in r["error"]
            assert [c.name for c in gw.calls] == ["rm_rf", "add", "add"]
            assert all(c.error for c in gw.calls) and "bad token" in gw.rejected

    run(main())


def test_200_concurrent_connections_while_a_good_client_works(registry, sock_dir):
    async def main():
        async with ToolGateway(registry, sock_dir / "gw.sock", call_budget=10_000) as gw:
            good = asyncio.create_task(asyncio.to_thread(good_client, gw, 30))
            payloads = (
                [request(gw, tool="nope")] * 80
                + [b"\x00\x01garbage\n"] * 40
                + [request(gw, tool="add", args=["x"])] * 40
                + [request(gw, tool="nap", args=[0.01])] * 40
            )
            replies = await asyncio.gather(*(raw(gw.socket_path, p) for p in payloads))
            assert all(b'"ok":' in r for r in replies)
            results = await good
            assert [r["result"] for r in results] == [i + 1 for i in range(30)]
            names = [c.name for c in gw.calls]
            assert names.count("add") == 30 + 40 and names.count("nope") == 80 and names.count("nap") == 40
            assert sum(c.error is None for c in gw.calls if c.name == "nap") == 40

    run(main())


def test_idle_connections_make_room_and_busy_ones_make_new_ones_wait(registry, sock_dir):
    async def main():
        async with ToolGateway(registry, sock_dir / "gw.sock", max_connections=5) as gw:
            idle = [await asyncio.open_unix_connection(str(gw.socket_path)) for _ in range(5)]
            await asyncio.sleep(0.05)
            # at the limit: the oldest idle connection is closed (once idle for a second) to make room
            assert (await asyncio.to_thread(good_client, gw, 2))[-1]["result"] == 2
            assert any("closed an idle connection" in r for r in gw.rejected)
            assert gw.open_connections <= 5
            for _, w in idle:
                w.close()
            # five busy calls: a sixth waits in the listen backlog (no error) and is served after them
            naps = [raw(gw.socket_path, request(gw, tool="nap", args=[0.5])) for _ in range(5)]
            busy = asyncio.gather(*naps)
            await asyncio.sleep(0.1)
            gw.take_calls()
            assert (await asyncio.to_thread(good_client, gw, 1))[0]["result"] == 1
            assert all(b'"rested"' in r for r in await busy)
            assert next(c.name for c in gw.calls) == "nap"  # add ran once a nap's connection closed

    run(main())


def test_a_flooded_gateway_does_not_disturb_another_rollout(registry, sock_dir):
    async def main():
        async with (
            ToolGateway(registry, sock_dir / "a.sock", rollout_id="a", call_timeout_s=5) as a,
            ToolGateway(registry, sock_dir / "b.sock", rollout_id="b") as b,
        ):
            # rollout a: every worker thread stuck in a slow tool, plus garbage
            flood = [raw(a.socket_path, request(a, tool="nap", args=[0.4])) for _ in range(20)]
            flood += [raw(a.socket_path, b"\xff" * 1000 + b"\n") for _ in range(20)]
            flood_task = asyncio.gather(*flood)
            await asyncio.sleep(0.1)
            results = await asyncio.to_thread(good_client, b, 10)
            assert not flood_task.done()  # b answered while a was still busy
            assert [r["result"] for r in results] == list(range(1, 11))
            await flood_task
            assert {c.name for c in b.calls} == {"add"} and {c.name for c in a.calls} == {"nap"}

    run(main())


@pytest.mark.parametrize("payload", [b"{}\n", b'{"id": 1}\n', b"null\n", b'"str"\n', b"\n"])
def test_odd_but_valid_json(registry, sock_dir, payload):
    async def main():
        async with ToolGateway(registry, sock_dir / "gw.sock") as gw:
            reply = await raw(gw.socket_path, payload)
            assert reply == b"" or json.loads(reply.splitlines()[0])["ok"] is False
            assert (await asyncio.to_thread(good_client, gw, 1))[0]["ok"]

    run(main())

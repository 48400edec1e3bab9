"""A hostile kernel and misbehaving tools against a real gateway on a real unix socket.

Every request line gets exactly one reply; the recorded call holds exactly what the kernel
received; nothing a tool raises reaches the event loop; idle sockets cannot lock a rollout out.
Raw blocking sockets play the kernel (it talks to the gateway the same way).
"""

import asyncio
import json
import socket
import threading
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from workbench.runtime import GatewayClient
from workbench.runtime.protocol import MAX_DEPTH, decode
from workbench.safetext import safe_text
from workbench.tools import ToolGateway, ToolRegistry, tool
from workbench.tools.connections import ConnectionBudget


class CustomBase(BaseException):
    pass


class Unprintable(Exception):
    def __str__(self):
        raise ValueError("no message for you")


RAISABLE = {
    "SystemExit": SystemExit,
    "KeyboardInterrupt": KeyboardInterrupt,
    "GeneratorExit": GeneratorExit,
    "CustomBase": CustomBase,
    "StopIteration": StopIteration,
    "CancelledError": asyncio.CancelledError,
    "Unprintable": Unprintable,
}


@tool
def raise_sync(kind: str) -> str:
    """Raise the named exception (in the gateway's thread pool)."""
    raise RAISABLE[kind]()


@tool
async def raise_async(kind: str) -> str:
    """Raise the named exception (on the gateway's event loop)."""
    await asyncio.sleep(0)
    raise RAISABLE[kind]()


@tool
def echo(value: object) -> object:
    """Return the argument."""
    return value


@tool
def produce(codepoints: list) -> str:
    """Return the text made of these code points (lone surrogates included)."""
    return "".join(map(chr, codepoints))


@tool
def fail_with(codepoints: list) -> str:
    """Raise RuntimeError with a message made of these code points."""
    raise RuntimeError("".join(map(chr, codepoints)))


@tool
def add(a: int, b: int = 1) -> int:
    """Add two integers."""
    return a + b


@tool
def nap(seconds: float) -> str:
    """Sleep, then answer."""
    time.sleep(seconds)
    return "rested"


@tool
def huge(n: int) -> str:
    """n characters."""
    return "x" * n


TOOLS = [raise_sync, raise_async, echo, produce, fail_with, add, nap, huge]


# -- harness ------------------------------------------------------------------------------------
class Served:
    """A gateway on its own event loop in a thread; the test thread plays the kernel."""

    def __init__(self, path, **options):
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.gw = self.do(ToolGateway(ToolRegistry(TOOLS), path, **options).start())

    def do(self, coro):
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(30)

    def close(self):
        if self.thread.is_alive():
            self.do(self.gw.close())
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(10)
        self.loop.close()

    def records(self, n, timeout=20.0):
        """The first n recorded calls (waits until they are there)."""
        deadline = time.monotonic() + timeout
        while len(self.gw.calls) < n and time.monotonic() < deadline:
            time.sleep(0.01)
        return list(self.gw.calls[:n])


@pytest.fixture
def served(sock_dir):
    made = []

    def make(**options):
        s = Served(sock_dir / f"gw{len(made)}.sock", **options)
        made.append(s)
        return s

    yield make
    for s in made:
        s.close()


def wait_until(predicate, timeout=20.0):
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out waiting"
        time.sleep(0.01)


def line(gw, **fields) -> bytes:
    """One request line, JSON-escaped (so lone surrogates travel as \\ud800 escapes)."""
    body = {"id": 1, "op": "call", "token": gw.token, "args": [], "kwargs": {}, **fields}
    return json.dumps(body).encode() + b"\n"


def exchange(gw, payload: bytes, timeout: float = 20.0) -> list[bytes]:
    """Send `payload`, half-close, and return every line the gateway sends until it hangs up."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(timeout)
        sock.connect(str(gw.socket_path))
        try:
            sock.sendall(payload)
            sock.shutdown(socket.SHUT_WR)
        except (BrokenPipeError, ConnectionResetError):
            pass  # it hung up mid-request; its reply is still readable
        data = b""
        try:
            while chunk := sock.recv(65536):
                data += chunk
        except ConnectionResetError:
            pass
    return data.splitlines(keepends=True)


def one_reply(gw, payload: bytes) -> dict:
    """The single, well-formed reply to a one-line request."""
    replies = exchange(gw, payload)
    assert len(replies) == 1, replies
    assert replies[0].endswith(b"\n")
    return json.loads(replies[0].decode("utf-8"))  # strict UTF-8: raises on anything unencodable


def still_serves(gw, n=2):
    client = GatewayClient(str(gw.socket_path), gw.token, timeout_s=20)
    assert [client.request({"op": "call", "tool": "add", "args": [i], "kwargs": {}})["result"] for i in range(n)] == [
        i + 1 for i in range(n)
    ]


def assert_truthful(record, reply):
    """The record holds exactly what the reply carried."""
    if reply["ok"]:
        assert record.error is None and record.result == reply["result"]
    else:
        assert record.error == reply["error"] and record.result is None


# -- tools raising anything (BaseException included) ---------------------------------------------
def run_on_main_loop(coro):
    """As NBAgent runs: the gateway on the caller's own loop. A tool's SystemExit or KeyboardInterrupt
    reaching that loop would surface here."""
    try:
        return asyncio.run(asyncio.wait_for(coro, 60))
    except (SystemExit, KeyboardInterrupt, GeneratorExit, CustomBase) as exc:
        pytest.fail(f"a tool's {type(exc).__name__} reached the event loop")


@pytest.mark.parametrize("tool_name", ["raise_sync", "raise_async"])
@pytest.mark.parametrize("kind", ["SystemExit", "KeyboardInterrupt", "GeneratorExit", "CustomBase"])
def test_base_exceptions_from_tools_become_error_replies(sock_dir, tool_name, kind):
    async def main():
        registry = ToolRegistry(TOOLS)
        async with (
            ToolGateway(registry, sock_dir / "a.sock") as gw,
            ToolGateway(registry, sock_dir / "b.sock") as other,
        ):  # another rollout, same loop
            reply = await asyncio.to_thread(one_reply, gw, line(gw, tool=tool_name, args=[kind]))
            assert reply == {"id": 1, "ok": False, "error": f"{tool_name}() failed: {kind}"}
            assert_truthful(gw.calls[-1], reply)
            await asyncio.to_thread(still_serves, gw)
            await asyncio.to_thread(still_serves, other)

    run_on_main_loop(main())


def test_stop_iteration_and_cancelled_error_are_reported_at_once_not_as_timeouts(served):
    s = served(call_timeout_s=3)
    for tool_name in ("raise_sync", "raise_async"):
        for kind in ("StopIteration", "CancelledError"):
            reply = one_reply(s.gw, line(s.gw, tool=tool_name, args=[kind]))
            assert reply["ok"] is False and "timed out" not in reply["error"]
            # in a coroutine, Python turns StopIteration into RuntimeError (PEP 479)
            assert kind in reply["error"] or "RuntimeError: coroutine raised StopIteration" in reply["error"]
            assert_truthful(s.gw.calls[-1], reply)
    still_serves(s.gw)


def test_an_exception_whose_str_raises_is_an_error_not_a_success(served):
    s = served()
    for tool_name in ("raise_sync", "raise_async"):
        reply = one_reply(s.gw, line(s.gw, tool=tool_name, args=["Unprintable"]))
        assert reply["error"] == (
            f"{tool_name}() failed: Unprintable: (its message could not be read: str() raised ValueError)"
        )
        assert_truthful(s.gw.calls[-1], reply)


# -- requests that used to get no reply ------------------------------------------------------------
@pytest.mark.parametrize("token", ["é" * 32, "\ud800", ["x"], 12, None, {"t": 1}])
def test_any_token_gets_a_bad_token_reply(served, token):
    s = served()
    reply = one_reply(s.gw, line(s.gw, tool="add", args=[1], token=token))
    assert reply["ok"] is False and reply["error"].startswith("bad gateway token")
    assert s.gw.calls == [] and "bad token" in s.gw.rejected
    # non-ASCII bytes in the token, raw on the wire
    raw = b'{"id":2,"op":"call","tool":"add","args":[1],"token":"\xc3\xa9\xff"}\n'
    assert one_reply(s.gw, raw)["error"].startswith("bad gateway token")
    still_serves(s.gw)


@pytest.mark.parametrize("depth", [MAX_DEPTH, 1_000, 100_000])
def test_deep_json_gets_an_error_reply(served, depth):
    s = served()
    for payload in (
        b"[" * depth + b"]" * depth + b"\n",
        b'{"id":1,"args":' + b"[" * depth + b"]" * depth + b"}\n",
        b'{"id":1,"args":' + b"[" * depth + b"\n",
    ):  # unterminated
        reply = one_reply(s.gw, payload)
        assert reply["ok"] is False and reply["id"] is None
        assert "nested deeper than" in reply["error"] or reply["error"] == "requests are JSON objects, one per line"
    assert s.gw.calls == []
    still_serves(s.gw)


def test_nesting_up_to_the_limit_round_trips(served):
    s = served()
    value = 0
    for _ in range(MAX_DEPTH - 2):  # request → args → value: two levels taken
        value = [value]
    reply = one_reply(s.gw, line(s.gw, tool="echo", args=[value]))
    assert reply == {"id": 1, "ok": True, "result": value}
    deeper = one_reply(s.gw, line(s.gw, tool="echo", args=[[value]]))
    assert "nested deeper than 100 levels" in deeper["error"]


def test_a_result_with_lone_surrogates_is_sent_and_recorded_with_replacement_characters(served):
    s = served()
    reply = one_reply(s.gw, line(s.gw, tool="produce", args=[[0xD800, 0x20, 0x66, 0xDCFF]]))
    assert reply == {"id": 1, "ok": True, "result": "\ufffd f\ufffd"}
    assert_truthful(s.gw.calls[-1], reply)
    pair = one_reply(s.gw, line(s.gw, tool="produce", args=[[0xD83D, 0xDE00]]))
    assert pair["result"] == "😀"  # a high+low pair as two code points is the character it encodes


def test_an_error_message_with_lone_surrogates(served):
    s = served()
    reply = one_reply(s.gw, line(s.gw, tool="fail_with", args=[[0x62, 0xDCFF]]))
    assert reply == {"id": 1, "ok": False, "error": "fail_with() failed: RuntimeError: b\ufffd"}
    assert_truthful(s.gw.calls[-1], reply)


def test_echoed_ids_names_and_arguments_with_lone_surrogates(served):
    s = served()
    reply = one_reply(s.gw, line(s.gw, id="\ud800", tool="no\udcff", args=["\udfff"]))
    assert reply["id"] == "\ufffd" and reply["error"].startswith("unknown tool 'no\ufffd'")
    assert s.gw.calls[-1].name == "no\ufffd" and s.gw.calls[-1].arguments == {"args": ["\ufffd"], "kwargs": {}}
    reply = one_reply(s.gw, line(s.gw, tool="add", args=["\ud800"]))
    assert "must be int, got str: '\ufffd'" in reply["error"]
    assert_truthful(s.gw.calls[-1], reply)
    reply = one_reply(s.gw, line(s.gw, tool="echo", args=[{"\udc80k": ["\ud800v", b"\xff".decode("latin-1")]}]))
    assert reply["result"] == {"\ufffdk": ["\ufffdv", "ÿ"]}
    raw = line(s.gw, tool="echo").replace(b'"args": []', b'"args": ["caf\xc3\xa9 \xff\xfe"]')
    assert one_reply(s.gw, raw)["result"] == "café \ufffd\ufffd"  # invalid UTF-8 on the wire: U+FFFD
    assert_truthful(s.gw.calls[-1], {"ok": True, "result": "café \ufffd\ufffd"})


def test_a_final_answer_with_a_lone_surrogate_is_stored_as_sent(served):
    s = served()
    reply = one_reply(s.gw, line(s.gw, tool="submit_final_answer", args=["\ud800 forged"]))
    assert reply["ok"] and s.gw.final_answer == "\ufffd forged"
    assert reply["result"] == "Final answer submitted: \ufffd forged"


def test_the_kernel_side_client_sends_lone_surrogates_as_replacement_characters(served):
    s = served()
    client = GatewayClient(str(s.gw.socket_path), s.gw.token, timeout_s=20)
    assert client.request({"op": "call", "tool": "echo", "args": ["x\ud800"], "kwargs": {}})["result"] == "x\ufffd"
    assert client.request({"op": "notepad", "snapshot": {"facts": ["\udcff"]}})["ok"]
    assert s.gw.notepad == {"facts": ["\ufffd"]}


def test_a_reply_the_kernel_never_received_is_recorded_as_such(served):
    s = served(call_timeout_s=2)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:  # ask, then hang up at once
        sock.connect(str(s.gw.socket_path))
        sock.sendall(line(s.gw, tool="nap", args=[0.3]))
    [record] = s.records(1)
    wait_until(lambda: record.error is not None)
    assert record.result == "rested"
    assert record.error == "reply not delivered: the kernel closed the connection first"
    still_serves(s.gw)


def test_a_kernel_that_never_reads_stalls_only_itself(served):
    s = served(call_timeout_s=1, max_result_chars=5_000_000)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.connect(str(s.gw.socket_path))
        sock.sendall(line(s.gw, tool="huge", args=[4_000_000]))  # far more than a socket buffer
        still_serves(s.gw, 5)  # others are served while that reply is stuck
        record = next(c for c in s.records(6) if c.name == "huge")
        wait_until(lambda: record.error is not None)
        assert record.error == "reply not delivered: the kernel did not read it within 1 s"


# -- size cap and malformed lines ------------------------------------------------------------------
def test_an_oversize_line_gets_one_reply_then_hangup(served):
    s = served(max_request_bytes=10_000)
    for payload in (
        b"x" * 50_000,
        line(s.gw, tool="echo", args=["q" * 20_000]),
        b'{"id": 1, "args": ["' + b"\xff" * 30_000 + b'"]}\n',
    ):
        assert exchange(s.gw, payload) == [b'{"id":null,"ok":false,"error":"request over 10000 bytes"}\n']
    client = GatewayClient(str(s.gw.socket_path), s.gw.token, timeout_s=20)
    reply = client.request({"op": "call", "tool": "echo", "args": ["q" * 2_000_000], "kwargs": {}})
    assert reply["error"] == "request over 10000 bytes"  # the kernel is told why, not "broken pipe"
    assert s.gw.calls == []
    still_serves(s.gw)


def test_a_line_sent_byte_by_byte_and_a_missing_final_newline(served):
    s = served()
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(20)
        sock.connect(str(s.gw.socket_path))
        for byte in line(s.gw, tool="add", args=[41]):
            sock.sendall(bytes([byte]))
        assert json.loads(sock.makefile("rb").readline())["result"] == 42
    assert one_reply(s.gw, line(s.gw, tool="add", args=[1])[:-1])["result"] == 2  # EOF ends the line


def test_pipelined_requests_get_one_reply_each_in_order(served):
    s = served()
    payload = b"".join(line(s.gw, id=i, tool="add", args=[i]) for i in range(50))
    replies = [json.loads(r) for r in exchange(s.gw, payload)]
    assert [(r["id"], r["result"]) for r in replies] == [(i, i + 1) for i in range(50)]


def test_large_lines_are_parsed_off_the_event_loop(served):
    s = served(max_request_bytes=4_000_000)
    reply = one_reply(
        s.gw,
        line(
            s.gw,
            tool="echo",
            args=[[0] * 500_000],
        ),
    )
    assert reply["ok"] is False and "chars of JSON" in reply["error"]  # result over 20,000 chars
    assert len(s.gw._parser._threads) == 1  # the parser thread did it


# -- idle connections ------------------------------------------------------------------------------
def open_idle(gw, n):
    socks = []
    for _ in range(n):
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(20)
        sock.connect(str(gw.socket_path))
        socks.append(sock)
    return socks


def test_300_idle_sockets_do_not_lock_out_the_kernel(served):
    s = served()  # the defaults a rollout gets
    assert s.gw.auth_timeout_s <= 10 < s.gw.idle_timeout_s <= 60
    idle = open_idle(s.gw, 300)
    try:
        still_serves(s.gw, 3)
        assert s.gw.open_connections <= s.gw.connection_limit <= 32
        assert any("closed an idle connection" in r for r in s.gw.rejected)
    finally:
        for sock in idle:
            sock.close()


def test_connections_that_never_authenticate_time_out_first(served):
    s = served(auth_timeout_s=0.5, idle_timeout_s=60)
    authed = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    authed.settimeout(20)
    authed.connect(str(s.gw.socket_path))
    authed.sendall(line(s.gw, tool="add", args=[1]))
    reader = authed.makefile("rb")
    assert json.loads(reader.readline())["result"] == 2
    silent, bad_token, dripping = open_idle(s.gw, 3)
    bad_token.sendall(line(s.gw, tool="add", args=[1], token="guess"))
    dripping.sendall(b'{"id": 1')  # a slow line never completed
    assert b"bad gateway token" in bad_token.recv(1000)
    for sock in (silent, bad_token, dripping):  # closed by the gateway once 0.5 s have passed
        assert sock.recv(1000) == b""
        sock.close()
    assert sum("no valid token within 0.5 s" in r for r in s.gw.rejected) == 3
    authed.sendall(line(s.gw, tool="add", args=[2]))  # the authenticated one is still open
    assert json.loads(reader.readline())["result"] == 3
    authed.close()


def test_each_gateway_holds_at_most_its_share_of_the_process_budget(served):
    budget = ConnectionBudget(24, min_share=2)
    a, b, c = (served(budget=budget) for _ in range(3))
    assert [g.gw.connection_limit for g in (a, b, c)] == [8, 8, 8]
    flood = open_idle(a.gw, 40)  # rollout a's kernel floods its own gateway
    try:
        still_serves(a.gw)  # …and can still call its tools
        assert a.gw.open_connections <= 8
        held = [open_idle(g.gw, 8) for g in (b, c)]  # the others keep their whole share
        wait_until(lambda: b.gw.open_connections == c.gw.open_connections == 8)
        d = served(budget=budget)  # a fourth rollout: every share shrinks to 6, idle ones go first
        assert [g.gw.connection_limit for g in (a, b, c, d)] == [6] * 4
        wait_until(lambda: all(g.gw.open_connections <= 6 for g in (a, b, c, d)))
        still_serves(d.gw)
        for group in held:
            for sock in group:
                sock.close()
    finally:
        for sock in flood:
            sock.close()


# -- properties ------------------------------------------------------------------------------------
ANY_TEXT = st.text(st.characters(min_codepoint=0, max_codepoint=0x10FFFF, exclude_categories=()), max_size=60)
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.floats(allow_nan=False) | ANY_TEXT,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(ANY_TEXT, inner, max_size=4),
    max_leaves=20,
)
PROPERTY = settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)


@pytest.fixture
def one_gateway(served):
    return served(call_budget=10**9)


@PROPERTY
@given(value=JSON_VALUES, request_id=JSON_VALUES)
def test_any_argument_gets_one_well_formed_reply_and_a_truthful_record(one_gateway, value, request_id):
    gw = one_gateway.gw
    gw.calls.clear()
    reply = one_reply(gw, line(gw, id=request_id, tool="echo", args=[value]))
    assert set(reply) == {"id", "ok", "result"} and reply["ok"] is True
    [record] = gw.calls
    assert_truthful(record, reply)
    assert reply["result"] == decode(json.dumps({"v": value}).encode())["v"]  # the text rule, nothing else
    assert reply["id"] == decode(json.dumps({"v": request_id}).encode())["v"]


CODEPOINTS = st.lists(st.integers(0xD800, 0xDFFF) | st.integers(0, 0x10FFFF) | st.integers(0, 0x7F), max_size=80)


@PROPERTY
@given(codepoints=CODEPOINTS, fail=st.booleans())
def test_any_result_or_error_text_gets_one_well_formed_reply_and_a_truthful_record(one_gateway, codepoints, fail):
    gw = one_gateway.gw
    gw.calls.clear()
    reply = one_reply(gw, line(gw, tool="fail_with" if fail else "produce", args=[codepoints]))
    [record] = gw.calls
    assert_truthful(record, reply)
    text = safe_text("".join(map(chr, codepoints)))  # the one rule: U+FFFD for each lone surrogate
    if fail:
        assert reply["error"] == "fail_with() failed: RuntimeError" + (f": {text}" if text else "")
    else:
        assert reply["result"] == text


@PROPERTY
@given(data=st.binary(max_size=300))
def test_any_bytes_as_a_request_line_never_crash_the_gateway(one_gateway, data):
    gw = one_gateway.gw
    first_line = data.split(b"\n")[0]
    replies = exchange(gw, data + b"\n")
    assert 1 <= len(replies) <= data.count(b"\n") + 1  # at least the first line is answered
    for reply in replies:
        parsed = json.loads(reply.decode("utf-8"))
        assert parsed["ok"] is False and isinstance(parsed["error"], str)
    if not first_line.strip().startswith(b"{"):
        assert json.loads(replies[0])["error"] == "requests are JSON objects, one per line"
    client = GatewayClient(str(gw.socket_path), gw.token, timeout_s=20)
    assert client.request({"op": "call", "tool": "add", "args": [1], "kwargs": {}})["result"] == 2

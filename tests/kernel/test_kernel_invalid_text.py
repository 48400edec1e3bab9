"""Text that is not valid UTF-8, both ways across the kernel boundary, with a real sandboxed kernel.

Printed lone surrogates and raw invalid bytes reach the host as U+FFFD (`workbench.safetext`);
nothing is dropped, the output reader survives, and code holding a lone surrogate still runs.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from workbench.kernel import Kernel
from workbench.kernel._channels import Channels, loads
from workbench.runtime.wire import pack
from workbench.safetext import REPLACEMENT, has_surrogates, safe_bytes, safe_text

# Arbitrary code points with lone surrogates well represented (st.characters() leaves them out).
any_text = st.lists(st.one_of(st.characters(), st.characters(categories=["Cs"])), max_size=60).map("".join)
PROPERTY = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

# Code that makes the kernel pack with jupyter_client's own packer (as a kernel started elsewhere
# would), so raw invalid bytes and JSON-escaped surrogates really reach the host's reader.
HOSTILE_SETUP = """
import json, jupyter_client.session as _jcs
from jupyter_client.jsonutil import json_default as _jd
_sess = get_ipython().kernel.session
_mine = _sess.pack
"""


def run(kernel: Kernel, code: str):
    obs = kernel.execute(code, timeout=20)
    assert not obs.timed_out and not obs.kernel_died, obs.text
    return obs


@pytest.fixture(scope="module")
def hostile(kernel: Kernel) -> Kernel:
    run(kernel, HOSTILE_SETUP)
    return kernel


# -- item: printed lone surrogates reach the host as U+FFFD (never raise, never lost) ---------------
def test_print_of_surrogateescape_text_reaches_host_as_replacement(kernel):
    obs = run(kernel, "print('\\udced\\udca0\\udc80')")
    assert obs.stdout == REPLACEMENT * 3 + "\n"
    assert not has_surrogates(obs.text) and obs.ok


def test_print_of_a_high_surrogate_is_not_dropped(kernel):
    obs = run(kernel, "print('a\\ud800b')")
    assert obs.stdout == f"a{REPLACEMENT}b\n"
    assert obs.stderr == ""  # the kernel packed the message: no serializer traceback


def test_print_of_a_raw_0xff_surrogate_neither_kills_the_reader_nor_times_out(kernel):
    obs = run(kernel, "print('\\udcff')")
    assert obs.ok and obs.stdout == REPLACEMENT + "\n"
    assert obs.duration_s < 10  # answered, not timed out (the bound only catches a hang)
    assert run(kernel, "print('still here')").stdout == "still here\n"


def test_surrogates_in_results_errors_and_displays_reach_host_as_replacement(kernel):
    assert run(kernel, "'x\\ud800'").result == "'x\\ud800'"  # repr escapes it: nothing to replace
    obs = run(kernel, "class R:\n    def __repr__(self): return 'r\\udcff'\nR()")
    assert obs.result == f"r{REPLACEMENT}"
    obs = run(kernel, "raise ValueError('bad \\ud800 value')")
    assert obs.error_name == "ValueError" and obs.error_value == f"bad {REPLACEMENT} value"
    assert all(not has_surrogates(line) for line in obs.traceback)
    obs = run(kernel, "from IPython.display import display\ndisplay({'text/plain': 'd\\udc80'}, raw=True)")
    assert obs.display == [{"text/plain": f"d{REPLACEMENT}"}]


def test_a_surrogate_pair_written_as_two_code_points_is_joined(kernel):
    assert run(kernel, "print('\\ud83d\\ude00')").stdout == "\U0001f600\n"


def test_raw_bytes_on_the_output_fd_become_replacement(kernel):
    obs = run(
        kernel, "import os, sys, time; sys.stdout.flush(); os.write(1, b'fd \\xff\\xfe bytes\\n')\ntime.sleep(0.3)"
    )
    assert f"fd {REPLACEMENT}{REPLACEMENT} bytes" in obs.stdout


# -- the host's reader, fed by a kernel that packs the old way ------------------------------------
def test_reader_decodes_raw_invalid_utf8_from_the_wire(hostile):
    obs = run(
        hostile, "_sess.pack = _jcs.json_packer\nprint('\\udcff|\\udced\\udca0\\udc80', flush=True)\n_sess.pack = _mine"
    )
    assert obs.stdout == f"{REPLACEMENT}|{REPLACEMENT * 3}\n"
    assert run(hostile, "print('next')").stdout == "next\n"


def test_reader_replaces_json_escaped_surrogates(hostile):
    obs = run(
        hostile,
        "_sess.pack = lambda o: json.dumps(o, default=_jd).encode()\n"
        "print('a\\ud800b', flush=True)\n"
        "_sess.pack = _mine",
    )
    assert obs.stdout == f"a{REPLACEMENT}b\n"


@pytest.mark.parametrize("bad", ["b'[1'", "b'[' * 100000", "b'[1, 2]'", "b'\\xff\\xfe'"])
def test_an_unreadable_output_message_is_shown_not_dropped_and_the_reader_lives(hostile, bad):
    obs = run(
        hostile,
        f"_sess.pack = lambda o: {bad} if o.get('name') == 'stdout' else _mine(o)\n"
        "print('lost?', flush=True)\n"
        "_sess.pack = _mine",
    )
    assert "an output message from the kernel could not be read" in obs.stderr
    assert run(hostile, "print('next')").stdout == "next\n"


def test_an_unreadable_execute_reply_still_ends_the_cell(hostile):
    obs = run(
        hostile,
        "def _once(o):\n"
        "    if 'status' in o and 'execution_count' in o:\n"
        "        _sess.pack = _mine\n"
        "        return b'{'\n"
        "    return _mine(o)\n"
        "_sess.pack = _once\n"
        "print('reply broken')",
    )
    assert obs.stdout == "reply broken\n" and obs.duration_s < 10
    assert run(hostile, "print('next')").stdout == "next\n"


# -- item: code holding a lone surrogate is sent (as U+FFFD) --------------------------------------
def test_code_with_a_lone_surrogate_runs_with_replacement(kernel):
    obs = run(kernel, "s = '\ud800 sent'\nprint(len(s), s)")  # a real surrogate in the source
    assert obs.ok and obs.stdout == f"6 {REPLACEMENT} sent\n"
    obs = run(kernel, "print('\udcff')")
    assert obs.ok and obs.stdout == REPLACEMENT + "\n"


def test_host_session_packs_with_the_safe_packer():
    ch = Channels("k" * 32)
    assert ch.session.pack is pack
    wire = ch.session.serialize(ch.session.msg("execute_request", {"code": "x = '\ud800'"}))
    assert b"\xef\xbf\xbd" in wire[-1] and safe_bytes(wire[-1]) == wire[-1].decode("utf-8")


# -- properties: arbitrary code points and bytes --------------------------------------------------
@PROPERTY
@given(text=any_text)
def test_any_printed_text_arrives_as_its_safe_form(kernel, text):
    obs = run(kernel, f"print({text!a}, end='')")
    assert obs.stdout == safe_text(text)
    assert obs.ok


@PROPERTY
@given(data=st.binary(max_size=80))
def test_any_bytes_decoded_with_surrogateescape_arrive_with_each_bad_byte_replaced(kernel, data):
    obs = run(kernel, f"print({data!r}.decode('utf-8', 'surrogateescape'), end='')")
    assert obs.stdout == safe_text(data.decode("utf-8", "surrogateescape"))


@PROPERTY
@given(data=st.binary(max_size=80))
def test_any_raw_bytes_on_the_wire_arrive_as_their_utf8_replacement(hostile, data):
    obs = run(
        hostile,
        "_sess.pack = _jcs.json_packer\n"  # surrogateescape: the bytes go out raw
        f"print({data!r}.decode('utf-8', 'surrogateescape'), end='', flush=True)\n"
        "_sess.pack = _mine",
    )
    assert obs.stdout == safe_bytes(data)


def _one_line(text: str) -> str:
    """`text` without what would end a line (for IPython, which splits on every line break)."""
    return "".join(c for c in text if c != "\0" and len(f"a{c}a".splitlines()) == 1)


@PROPERTY
@given(text=any_text)
def test_any_code_is_sent_and_runs(kernel, text):
    # the raw text (lone surrogates included) rides in a comment; its escaped twin is printed
    obs = run(kernel, f"_t = {text!a}  # {_one_line(text)}\nprint(_t, end='')")
    assert obs.ok, obs.text
    assert obs.stdout == safe_text(text)


@settings(max_examples=300, deadline=None)
@given(data=st.binary(max_size=200))
def test_loads_never_returns_surrogates_for_any_json_string_bytes(data):
    import json

    raw = json.dumps(data.decode("latin-1")).encode() + data  # escapes plus arbitrary raw bytes
    for part in (raw, json.dumps({"t": data.decode("utf-8", "surrogateescape")}).encode(), data):
        try:
            value = loads(part)
        except ValueError:
            continue
        assert not has_surrogates(json.dumps(value, ensure_ascii=False))

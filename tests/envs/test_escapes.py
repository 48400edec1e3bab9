"""Escape attempts sent as actions through `step()` of the served NB-Agent are contained exactly as through
`workbench.Kernel`: each attempt of tests/kernel/test_kernel.py runs both ways and must give the same,
contained, result (network, host files and secrets, the host's environment, writes outside the work dir,
limits, a memory bomb), and a session cannot see another session's files or processes."""

from __future__ import annotations

import os
import socket
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from kernel_starts import STARTS

from workbench.agent.config import AgentConfig
from workbench.envs import EpisodeHost
from workbench.envs.openenv import NBAgentAction
from workbench.envs.server import EnvServer, NBAgentClient
from workbench.kernel import Kernel
from workbench.sandbox import load_profile

HOST_SECRET = "wb-envs-host-secret-7c2d"
LIMITS = load_profile("default").limits


@pytest.fixture(scope="module")
def loopback_port() -> Iterator[int]:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    yield server.getsockname()[1]
    server.close()


@pytest.fixture(scope="module")
def home_secret() -> Iterator[Path]:
    path = Path.home() / ".wb_envs_test_secret"
    path.write_text("top secret")
    path.chmod(0o600)
    yield path
    path.unlink()


@pytest.fixture(scope="module", params=STARTS)
def both(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Kernel]]:
    """A served NB-Agent (its URL) and a direct `Kernel` of the same profile, both started one way (zygote or
    exec: every isolation test runs on each); every kernel starts while the host process holds a secret in its
    environment."""
    start = request.param
    os.environ["WB_ENVS_HOST_SECRET"] = HOST_SECRET
    agent = AgentConfig(max_steps=20, exec_timeout_s=60, kernel_start=start)
    host = EpisodeHost(agent=agent, max_sessions=2)
    try:
        root = tmp_path_factory.mktemp("k")
        with EnvServer(host) as server, Kernel(agent.profile, root=root, start=start) as kernel:
            yield server.url, kernel
    finally:
        os.environ.pop("WB_ENVS_HOST_SECRET", None)


def _served(url: str, code: str) -> str:
    with NBAgentClient(url).sync() as client:
        client.reset(question="escape")
        return client.step(NBAgentAction(code=code)).observation.output


def attempts(port: int, secret_file: Path) -> dict[str, str]:
    return {
        "network": (
            "import socket\nres = []\n"
            f"for addr in [('1.1.1.1', 53), ('8.8.8.8', 443), ('127.0.0.1', {port})]:\n"
            "    try:\n        socket.create_connection(addr, timeout=2); res.append('OPEN')\n"
            "    except OSError as e: res.append(type(e).__name__)\n"
            "try:\n    socket.getaddrinfo('pypi.org', 443); res.append('DNS')\n"
            "except OSError as e: res.append(type(e).__name__)\nres"
        ),
        "host_files": (
            f"out = []\nfor p in ['{secret_file}', '/etc/shadow', '{Path.home()}']:\n"
            "    try: out.append(open(p).read())\n"
            "    except OSError as e: out.append(type(e).__name__)\nout"
        ),
        "host_environment": f"import os\n[k for k, v in os.environ.items() if {HOST_SECRET!r} in v or 'WB_ENVS' in k]",
        "writes": (
            "res = {}\nfor p in ['/workspace/ok.txt', '/tmp/t.txt', '/usr/x', '/etc/x', '/x', "
            f"'{sys.prefix}/x', '/run/workbench/../x', '{Path.home()}/x']:\n"
            "    try: open(p, 'w').write('x'); res[p] = 'WROTE'\n"
            "    except OSError as e: res[p] = type(e).__name__\nres"
        ),
        "limits": (
            "import resource as r\n[r.getrlimit(x)[0] for x in (r.RLIMIT_AS, r.RLIMIT_NPROC, "
            "r.RLIMIT_CPU, r.RLIMIT_FSIZE, r.RLIMIT_NOFILE)]"
        ),
        "memory": (
            "try:\n    x, res = bytearray(8 * 2**30), 'ALLOCATED'\nexcept MemoryError:\n    res = 'MemoryError'\nres"
        ),
    }


CONTAINED = {
    "network": lambda out: "OPEN" not in out and "DNS" not in out,
    "host_files": lambda out: "top secret" not in out and "root:" not in out,
    "host_environment": lambda out: out == "[]",
    "writes": lambda out: {k for k, v in eval(out).items() if v == "WROTE"} == {"/workspace/ok.txt", "/tmp/t.txt"},
    "limits": lambda out: (
        eval(out)
        == [LIMITS.memory_mb << 20, LIMITS.processes, LIMITS.cpu_seconds, LIMITS.file_size_mb << 20, LIMITS.open_files]
    ),
    "memory": lambda out: out == "'MemoryError'",
}


@pytest.mark.parametrize("name", sorted(CONTAINED))
def test_an_escape_through_step_is_contained_as_through_kernel(
    name: str, both: tuple[str, Kernel], loopback_port: int, home_secret: Path
) -> None:
    url, kernel = both
    code = attempts(loopback_port, home_secret)[name]
    served = _served(url, code)
    direct = kernel.execute(code, timeout=60).text
    assert served == direct, f"{name}: served {served!r}, Kernel {direct!r}"
    assert CONTAINED[name](served), served
    assert not Path("/tmp/t.txt").exists() or Path("/tmp/t.txt").read_text() != "x"


PLANT = "for d in ('/workspace', '/tmp'):\n    open(f'{d}/t.txt', 'w').write(TOKEN)\n'ok'"
SEARCH = (
    "import glob, os\nfound = []\nplaces = ('/workspace/**', '/tmp/**', '/proc/*/cwd/*', '/proc/*/root/workspace/*')\n"
    "for p in [p for place in places for p in glob.glob(place, recursive=True)]:\n"
    "    try:\n        found += [p] if os.path.isfile(p) and TOKEN in open(p).read() else []\n"
    "    except OSError: pass\n"
    "(found, sorted(int(p) for p in os.listdir('/proc') if p.isdigit()))"
)


def test_sessions_cannot_reach_each_others_files_or_processes(both: tuple[str, Kernel]) -> None:
    url, _ = both
    token = repr("wb-envs-session-token-91f3")
    with NBAgentClient(url).sync() as first, NBAgentClient(url).sync() as second:
        first.reset(question="one")
        second.reset(question="two")
        planted = first.step(NBAgentAction(code=PLANT.replace("TOKEN", token))).observation
        found = second.step(NBAgentAction(code=SEARCH.replace("TOKEN", token))).observation.output
        own = first.step(NBAgentAction(code=SEARCH.replace("TOKEN", token))).observation.output
    assert planted.output == "'ok'"
    assert {"/tmp/t.txt", "/workspace/t.txt"} <= set(eval(own)[0])  # the search finds what it may see
    files, pids = eval(found)
    assert files == []
    assert len(pids) <= 4, pids  # its own pid namespace: the sandbox's init and its kernel

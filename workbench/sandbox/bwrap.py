"""Turn a `SandboxProfile` into the argv that runs a command inside bubblewrap.

Inside the sandbox:

    /usr, /bin, /lib*, /sbin   host system dirs, read-only
    <python prefix>, <venv>    the Python environment, read-only, at their host paths
    <workbench source dir>     the package itself, read-only (so `import workbench.runtime` works)
    /workspace                 private tmpfs (cwd), size-capped
    /tmp                       private tmpfs ($HOME), size-capped
    /run/workbench             the rollout's run dir: connection file, ipc sockets, gateway.sock

The kernel writes nowhere on the host's disk: /workspace and /tmp live in the sandbox's own
mount namespace, capped together at `limits.disk_mb` (/tmp gets `tmp_size_mb`, /workspace the
rest), and vanish with it. Writing past a cap is an ordinary `OSError` (ENOSPC). tmpfs pages are
memory, so the sandbox's cgroup allows `memory_mb + disk_mb` (see `cgroups.py`); inodes of
empty files take no blocks but are charged there too (~1 KB each). The run dir is a host dir; as
root it is sealed once the kernel has bound its sockets (`RolloutDir.seal`).

When workbench runs as root the chain is

    prlimit … -- bwrap(as root: mount/pid/net/ipc/uts/cgroup ns) -- setpriv --reuid=UID … --
        bwrap(unprivileged: user ns, nested user ns disabled) -- COMMAND

The outer bwrap can bind paths that only root may traverse (e.g. a Python under /root); the
command then runs as a plain unprivileged uid with no capabilities, so root-only files stay
unreadable and RLIMIT_NPROC binds. As a normal user, one unprivileged bwrap does it all.
`--die-with-parent` at each level plus exec-only wrappers (prlimit, setpriv) mean the whole
sandbox dies when the host process does.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import workbench
from workbench.errors import SandboxError
from workbench.sandbox.profile import SandboxProfile

INSIDE_RUN = "/run/workbench"
INSIDE_WORK = "/workspace"
_SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
_ETC_BASE = (
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/localtime",
    "/etc/alternatives",
    "/etc/mime.types",
)
_ETC_NET = (
    "/etc/resolv.conf",
    "/etc/hosts",
    "/etc/nsswitch.conf",
    "/etc/ssl",
    "/etc/ca-certificates",
    "/etc/pki",
    "/etc/gai.conf",
    "/etc/host.conf",
)
_MB = 1 << 20


@dataclass(frozen=True)
class SandboxSpec:
    """Everything needed to run one command in one sandbox."""

    profile: SandboxProfile
    run_dir: Path  # bound read-write at /run/workbench
    work_dir: Path | None = None  # ignored: the sandbox's /workspace is its own capped tmpfs
    uid: int | None = None  # unprivileged uid to run as (root hosts); None = stay as self
    gid: int | None = None
    env: dict[str, str] | None = None  # extra variables (already allow-listed by the caller)
    extra_ro_binds: tuple[str, ...] = ()  # "HOST" or "HOST:INSIDE"


def python_paths() -> list[Path]:
    """Host paths the sandboxed Python needs, read-only: base prefix, venv, the package source."""
    paths = [Path(sys.base_prefix).resolve(), Path(sys.prefix).resolve(), Path(workbench.__file__).resolve().parent]
    keep: list[Path] = []
    for p in paths:
        if any(str(p).startswith(d + "/") for d in _SYSTEM_DIRS if os.path.isdir(d)):
            continue  # already visible through /usr etc.
        if not any(p == k or k in p.parents for k in keep):
            keep = [k for k in keep if p not in k.parents] + [p]
    return keep


def sandbox_python() -> str:
    """The interpreter to run inside (the venv's, reachable at its host path)."""
    return sys.executable


def rlimit_argv(profile: SandboxProfile) -> list[str]:
    lim = profile.limits
    return [
        _which("prlimit"),
        f"--as={lim.memory_mb * _MB}",
        f"--nproc={lim.processes}",
        f"--cpu={lim.cpu_seconds}",
        f"--fsize={lim.file_size_mb * _MB}",
        f"--nofile={lim.open_files}",
        "--core=0",
        "--",
    ]


def _system_binds() -> list[str]:
    args: list[str] = []
    for d in _SYSTEM_DIRS:
        if os.path.islink(d):
            args += ["--symlink", os.readlink(d), d]
        elif os.path.isdir(d):
            args += ["--ro-bind", d, d]
    return args


def base_env(spec: SandboxSpec) -> dict[str, str]:
    """The whole environment inside: allow-listed host vars, the profile's, then the caller's."""
    venv_bin = str(Path(sys.prefix) / "bin")
    env = {k: os.environ[k] for k in spec.profile.pass_env if k in os.environ}
    env.update(
        {
            "PATH": f"{venv_bin}:/usr/local/bin:/usr/bin:/bin",
            "HOME": "/tmp",
            "USER": "sandbox",
            "LOGNAME": "sandbox",
            "LANG": env.get("LANG", "C.UTF-8"),
            "IPYTHONDIR": "/tmp/.ipython",
            "JUPYTER_RUNTIME_DIR": "/tmp/.jupyter-runtime",
            "JUPYTER_PLATFORM_DIRS": "1",
            "PYTHONNOUSERSITE": "1",
            "WORKBENCH_SANDBOX": "1",
            "WORKBENCH_RUN_DIR": INSIDE_RUN,
            "WORKBENCH_WORK_DIR": INSIDE_WORK,
            "WORKBENCH_GATEWAY": f"{INSIDE_RUN}/gateway.sock",
        }
    )
    env.update(spec.profile.env)
    env.update(spec.env or {})
    return env


def build_argv(spec: SandboxSpec, command: list[str]) -> list[str]:
    """The full argv (rlimits → bwrap → [setpriv → bwrap] → command)."""
    p = spec.profile
    as_root = spec.uid is not None
    # As root, the outer bwrap keeps its pid-1 reaper: it runs as root, so its death signal
    # survives, and its death tears down the whole pid namespace. As a user, the command is pid 1.
    pid1 = [] if as_root else ["--as-pid-1"]
    argv = [
        *rlimit_argv(p),
        _which("bwrap"),
        *_namespaces(p.network, as_root),
        "--die-with-parent",
        "--new-session",
        *pid1,
        "--hostname",
        "sandbox",
        "--clearenv",
    ]
    for k, v in base_env(spec).items():
        argv += ["--setenv", k, v]
    argv += _filesystem(spec)
    if not as_root:  # (as root the inner bwrap changes dir: the outer has dropped DAC override)
        argv += ["--chdir", INSIDE_WORK]
    if as_root:
        argv += _drop_root(spec)
    return [*argv, "--", *command]


def _namespaces(network: bool, as_root: bool) -> list[str]:
    if as_root:  # outer bwrap is privileged: list namespaces (no user ns: it would map to root)
        ns = ["--unshare-ipc", "--unshare-pid", "--unshare-uts", "--unshare-cgroup-try"]
        return ns + ([] if network else ["--unshare-net"])
    ns = ["--unshare-all", "--unshare-user", "--disable-userns"]
    return ns + (["--share-net"] if network else [])


def _filesystem(spec: SandboxSpec, run_bind: bool = True) -> list[str]:
    """System binds, a minimal /etc, /proc and /dev, the tmpfs /tmp and workspace, read-only binds and the
    writable run dir (`run_bind=False`: an empty mount point there, for a zygote's children to fill)."""
    p = spec.profile
    argv = _system_binds()
    argv += ["--perms", "0755", "--dir", "/etc"]
    for f in _ETC_BASE + (_ETC_NET if p.etc_network else ()):
        argv += ["--ro-bind-try", f, f]
    argv += ["--proc", "/proc", "--dev", "/dev"]
    for size_mb, inside in ((p.tmp_size_mb, "/tmp"), (p.workspace_size_mb, INSIDE_WORK)):
        argv += ["--perms", "1777", "--size", str(size_mb * _MB), "--tmpfs", inside]
    made: set[str] = set()
    binds = [(str(x), str(x)) for x in python_paths()]
    binds += [(str(h), i) for h, i in p.bind_pairs() + _pairs(spec.extra_ro_binds)]
    for host, inside in binds:
        argv += [*_parents(inside, made), "--ro-bind", host, inside]
    argv += _parents(INSIDE_RUN, made)
    argv += ["--bind", str(spec.run_dir), INSIDE_RUN] if run_bind else ["--perms", "0755", "--dir", INSIDE_RUN]
    return argv


def _drop_root(spec: SandboxSpec) -> list[str]:
    """As root: drop every capability but those setpriv needs, become `spec.uid`, and run an inner,
    unprivileged bwrap in the outer one's filesystem."""
    gid = spec.gid if spec.gid is not None else spec.uid
    return [
        "--cap-drop",
        "ALL",
        "--cap-add",
        "CAP_SETUID",
        "--cap-add",
        "CAP_SETGID",
        "--cap-add",
        "CAP_SETPCAP",
        "--",
        _which("setpriv"),
        f"--reuid={spec.uid}",
        f"--regid={gid}",
        "--clear-groups",
        "--inh-caps=-all",
        "--bounding-set=-all",
        "--no-new-privs",
        "--",
        _which("bwrap"),
        "--unshare-user",
        "--disable-userns",
        "--die-with-parent",
        "--bind",
        "/",
        "/",
        "--chdir",
        INSIDE_WORK,
    ]


def _parents(inside: str, made: set[str]) -> list[str]:
    """`--dir` for each missing ancestor, world-traversable (bwrap would make them 0700)."""
    args: list[str] = []
    for parent in reversed(Path(inside).parents):
        d = str(parent)
        if d in ("/", "/tmp") or d in made or any(d == s or d.startswith(s + "/") for s in _SYSTEM_DIRS):
            continue
        made.add(d)
        args += ["--perms", "0755", "--dir", d]
    return args


def _pairs(specs: tuple[str, ...]) -> list[tuple[Path, str]]:
    out = []
    for s in specs:
        host, _, inside = s.partition(":")
        if not Path(host).exists():
            raise SandboxError(f"extra read-only bind {host} does not exist; fix extra_ro_binds")
        out.append((Path(host), inside or host))
    return out


def _which(tool: str) -> str:
    path = shutil.which(tool) or (f"/usr/bin/{tool}" if os.path.exists(f"/usr/bin/{tool}") else None)
    if path is None:
        pkg = {"bwrap": "bubblewrap", "prlimit": "util-linux", "setpriv": "util-linux"}.get(tool, tool)
        raise SandboxError(
            f"`{tool}` is not installed; install it with `sudo apt-get install {pkg}` "
            "(or run `make setup`), or pass isolation='none' to run unsandboxed"
        )
    return path


@lru_cache(maxsize=1)
def check_sandbox() -> None:
    """Raise `SandboxError` naming the fix unless bubblewrap and user namespaces work here."""
    bwrap = _which("bwrap")
    _which("prlimit")
    if os.geteuid() == 0:
        _which("setpriv")
    probe = [bwrap, "--unshare-all", "--unshare-user", "--ro-bind", "/", "/", "--", "/bin/true"]
    try:
        r = subprocess.run(probe, capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise SandboxError(f"bubblewrap could not run ({exc}); check `bwrap --version`") from exc
    if r.returncode != 0:
        raise SandboxError(
            "bubblewrap cannot create user namespaces here: "
            + r.stderr.strip()
            + ". Enable them (`sysctl -w kernel.unprivileged_userns_clone=1` and "
            "`sysctl -w user.max_user_namespaces=10000`; in Docker run with "
            "`--security-opt seccomp=unconfined --security-opt apparmor=unconfined`), "
            "or pass isolation='none' to run unsandboxed (unsafe)"
        )

"""One isolation plan: what a kernel's sandbox is, whichever way the kernel starts.

    plan = plan_for(profile, kernel_dir.run, uid=60001, env={"X": "1"}, extra_ro_binds=("/data",))
    build_argv(plan, command)              # start="exec": prlimit → bwrap [→ setpriv → bwrap] → command
    zygote_argv(plan.profile, command)     # start="zygote", stage 1: the profile's zygote (bwrap)
    zygote_request(plan, args).encode()    # stage 2: what each child forked from it applies to itself

An `IsolationPlan` has two parts because a zygote isolates in two stages: its `profile`, a
`ProfilePlan`, is what every kernel of a profile shares (a zygote's bwrap sets it up once); its own
fields are one kernel's (its uid, run dir, binds, environment variables, cgroup). Each start method
keeps a table, `RENDERS` (in `bwrap.py` and `zygote.py`), from each field ("ProfilePlan.mounts") to
the function that applies it on that path, or to `Unsupported(because=...)`; tests/sandbox/test_plan.py
walks the fields and fails on one with neither, and on a rendered field whose change leaves that
path's output unchanged.

A new sandbox property is a field here, a renderer in `bwrap.py` and one in `zygote.py` (applied by
`isolate.py` in the child), each named in its `RENDERS`.
"""

from __future__ import annotations

import os
import site
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import workbench
from workbench.errors import SandboxError
from workbench.sandbox.profile import SandboxProfile

INSIDE_RUN = "/run/workbench"
"""The kernel's run dir (connection file, ipc sockets, the tool gateway's socket) as the sandbox sees it."""
INSIDE_WORK = "/workspace"
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
ETC_BASE = (
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/localtime",
    "/etc/alternatives",
    "/etc/mime.types",
)
ETC_NET = (
    "/etc/resolv.conf",
    "/etc/hosts",
    "/etc/nsswitch.conf",
    "/etc/ssl",
    "/etc/ca-certificates",
    "/etc/pki",
    "/etc/gai.conf",
    "/etc/host.conf",
)
# Unshared for every kernel (the network namespace too unless the profile shares the host's).
NAMESPACES = ("mount", "pid", "ipc", "uts", "cgroup", "user")
_MB = 1 << 20

MountKind = Literal["ro-bind", "ro-bind-try", "symlink", "dir", "proc", "dev", "tmpfs"]


@dataclass(frozen=True)
class Mount:
    """One entry of the filesystem view, in order: `ro-bind` SOURCE at TARGET (`ro-bind-try`: if
    SOURCE exists), `symlink` TARGET → SOURCE, `dir` (MODE), `proc`, `dev`, `tmpfs` (SIZE_MB, MODE)."""

    kind: MountKind
    target: str
    source: str = ""
    size_mb: int = 0
    mode: int = 0o755


@dataclass(frozen=True)
class Bind:
    """A host path seen at `inside` (read-only unless it is the run dir)."""

    host: Path
    inside: str


@dataclass(frozen=True)
class ProfilePlan:
    """What every kernel of one profile shares: a zygote sets this up once, in its bwrap."""

    namespaces: tuple[str, ...]  # unshared, besides the network's (`network`)
    network: bool  # share the host's network namespace (else a new one, loopback only)
    hostname: str
    mounts: tuple[Mount, ...]  # the filesystem view; `tmpfs` entries are fresh for each kernel
    env: tuple[tuple[str, str], ...]  # environment variables: allow-listed host vars, workbench's, the profile's
    cwd: str
    rlimits: tuple[tuple[str, int], ...]  # prlimit names (as, nproc, cpu, fsize, nofile, core) and values
    capabilities: tuple[str, ...] = ()  # capabilities the kernel keeps (none is the only value rendered)
    no_new_privs: bool = True
    nested_userns: bool = False  # whether the kernel may create user namespaces of its own
    new_session: bool = True  # no controlling terminal shared with the host (setsid)
    die_with_parent: bool = True  # the whole sandbox ends when the host process does
    fresh_address_space: bool = True  # each kernel is a fresh execve: its own address-space layout

    def scratch(self) -> tuple[tuple[str, int, int], ...]:
        """The size-capped tmpfs mounts each kernel gets fresh: (inside, MiB, mode)."""
        return tuple((m.target, m.size_mb, m.mode) for m in self.mounts if m.kind == "tmpfs")


@dataclass(frozen=True)
class IsolationPlan:
    """One kernel's sandbox: its profile's part, plus what is its own."""

    profile: ProfilePlan
    run: Bind  # the kernel dir's run/, read-write at /run/workbench
    binds: tuple[Bind, ...] = ()  # the kernel's extra read-only binds
    env: tuple[tuple[str, str], ...] = ()  # the caller's environment variables, over the profile's
    uid: int | None = None  # the unprivileged uid it runs as (workbench as root); None: stays as self
    gid: int | None = None
    cgroup: tuple[Path, ...] = ()  # the cgroup dirs it joins before it starts (one per hierarchy)

    def environment(self) -> dict[str, str]:
        """Exactly the environment variables inside: the profile's, then the caller's."""
        env = dict(self.profile.env)
        env.update(self.env)
        return env


@dataclass(frozen=True)
class Rendered:
    """A plan field applied on one start path, by `by`; `weaker` says how it falls short of exec's."""

    by: Callable[..., object]
    weaker: str = ""


@dataclass(frozen=True)
class Unsupported:
    """A plan field one start path cannot apply, and why."""

    because: str


Renders = Mapping[str, Rendered | Unsupported]


# Properties with one value: every renderer applies exactly it, and refuses a plan that asks for another.
FIXED: dict[str, object] = {
    "namespaces": NAMESPACES,
    "capabilities": (),
    "no_new_privs": True,
    "nested_userns": False,
    "new_session": True,
    "die_with_parent": True,
    "fresh_address_space": True,
}


def require_fixed(plan: ProfilePlan, path: str, renders: Renders) -> None:
    """Refuse a plan whose fixed properties (those `renders` applies) differ from the value rendered."""
    for name, value in FIXED.items():
        if isinstance(renders.get(f"ProfilePlan.{name}"), Rendered) and getattr(plan, name) != value:
            raise SandboxError(f"{path} applies {name}={value!r} only, not {getattr(plan, name)!r}")


def pth_dirs(site_dirs: Iterable[str]) -> list[Path]:
    """The directories the `.pth` files of `site_dirs` add to the import path (as `site` reads them: one
    path per line, relative to its site dir; `import` lines and comments skipped), e.g. a virtualenv
    that reuses another's packages. The workbench checkout itself is left out: its package is bound alone."""
    checkout = Path(workbench.__file__).resolve().parent.parent
    found: list[Path] = []
    for site_dir in site_dirs:
        for pth in sorted(Path(site_dir).glob("*.pth")):
            try:
                lines = pth.read_text(encoding="utf-8", errors="replace").splitlines()
            except OSError:
                continue
            for line in lines:
                if not line.strip() or line.startswith(("#", "import ", "import\t")):
                    continue
                path = (Path(site_dir) / line.rstrip()).resolve()
                if path.is_dir() and path != checkout and path not in found:
                    found.append(path)
    return found


def python_paths() -> list[Path]:
    """Host paths the sandboxed Python needs, read-only: base prefix, venv, the package source, and the
    directories the venv's `.pth` files add (its packages may live in another environment)."""
    paths = [Path(sys.base_prefix).resolve(), Path(sys.prefix).resolve(), Path(workbench.__file__).resolve().parent]
    paths += pth_dirs(site.getsitepackages())
    keep: list[Path] = []
    for p in paths:
        if any(str(p).startswith(d + "/") for d in SYSTEM_DIRS if os.path.isdir(d)):
            continue  # already visible through /usr etc.
        if not any(p == k or k in p.parents for k in keep):
            keep = [k for k in keep if p not in k.parents] + [p]
    return keep


def parse_binds(specs: Iterable[str]) -> tuple[Bind, ...]:
    """Extra read-only binds, "HOST" or "HOST:INSIDE", as `Bind`s; a missing host path is an error."""
    out = []
    for spec in specs:
        host, _, inside = spec.partition(":")
        if not Path(host).exists():
            raise SandboxError(f"extra read-only bind {host} does not exist; fix extra_ro_binds")
        out.append(Bind(Path(host), inside or host))
    return tuple(out)


def sandbox_env(profile: SandboxProfile) -> dict[str, str]:
    """The profile's environment inside: allow-listed host vars, workbench's, then the profile's."""
    venv_bin = str(Path(sys.prefix) / "bin")
    env = {k: os.environ[k] for k in profile.pass_env if k in os.environ}
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
    env.update(profile.env)
    return env


def _mounts(profile: SandboxProfile) -> tuple[Mount, ...]:
    """System dirs, a minimal /etc, /proc and /dev, the tmpfs /tmp and workspace, then the Python
    environment and the profile's binds, read-only."""
    mounts: list[Mount] = []
    for d in SYSTEM_DIRS:
        if os.path.islink(d):
            mounts.append(Mount("symlink", d, source=os.readlink(d)))
        elif os.path.isdir(d):
            mounts.append(Mount("ro-bind", d, source=d))
    mounts.append(Mount("dir", "/etc", mode=0o755))
    mounts += [Mount("ro-bind-try", f, source=f) for f in ETC_BASE + (ETC_NET if profile.etc_network else ())]
    mounts += [Mount("proc", "/proc"), Mount("dev", "/dev")]
    for size_mb, inside in ((profile.tmp_size_mb, "/tmp"), (profile.workspace_size_mb, INSIDE_WORK)):
        mounts.append(Mount("tmpfs", inside, size_mb=size_mb, mode=0o1777))
    binds = [(str(p), str(p)) for p in python_paths()] + [(str(h), i) for h, i in profile.bind_pairs()]
    mounts += [Mount("ro-bind", inside, source=host) for host, inside in binds]
    return tuple(mounts)


def _rlimits(profile: SandboxProfile) -> tuple[tuple[str, int], ...]:
    lim = profile.limits
    return (
        ("as", lim.memory_mb * _MB),
        ("nproc", lim.processes),
        ("cpu", lim.cpu_seconds),
        ("fsize", lim.file_size_mb * _MB),
        ("nofile", lim.open_files),
        ("core", 0),
    )


def profile_plan(profile: SandboxProfile) -> ProfilePlan:
    """The part of the plan that every kernel of `profile` shares."""
    return ProfilePlan(
        namespaces=NAMESPACES,
        network=profile.network,
        hostname="sandbox",
        mounts=_mounts(profile),
        env=tuple(sandbox_env(profile).items()),
        cwd=INSIDE_WORK,
        rlimits=_rlimits(profile),
    )


def plan_for(
    profile: SandboxProfile,
    run_dir: Path,
    *,
    uid: int | None = None,
    gid: int | None = None,
    env: Mapping[str, str] | None = None,
    extra_ro_binds: Sequence[str] = (),
    cgroup: Sequence[Path] = (),
) -> IsolationPlan:
    """One kernel's plan: `profile`'s part, its run dir, uid (gid defaults to it), extra environment
    variables (already allow-listed by the caller), extra read-only binds and cgroup dirs."""
    return IsolationPlan(
        profile=profile_plan(profile),
        run=Bind(Path(run_dir), INSIDE_RUN),
        binds=parse_binds(extra_ro_binds),
        env=tuple((env or {}).items()),
        uid=uid,
        gid=gid if gid is not None or uid is None else uid,
        cgroup=tuple(Path(d) for d in cgroup),
    )
